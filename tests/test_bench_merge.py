"""bench --merge keeps each section's machine, so a report merged from parts run on different
hosts says which section ran where, however many parts later."""
import json

from bench import merge, report

INTEL = {"CPU": "Intel Xeon", "OS": "Linux 6.1", "Java": "17.0.15"}
AMD = {"CPU": "AMD EPYC", "OS": "Linux 6.1", "Java": "17.0.15"}


def _section(command: str) -> dict:
    return {"date": "2026-12-03 10:00 UTC", "seconds": 60.0, "load_start": "1.0", "load_end": "1.0",
            "command": command, "parallel": "1.00", "jvm_warm_up": None, "notes": []}


def _part(previous: merge.Previous, names, machine):
    _, _, _, sections, notes = merge.combine(previous, [], {}, {}, {n: _section(f"--only {n}") for n in names},
                                             machine)
    return sections, notes


def _saved(tmp_path, sections) -> None:
    (tmp_path / "latest.json").write_text(json.dumps({
        "sizes": {"mode": "full"}, "results": [], "agreement": {}, "diagnostics": {}, "sections": sections,
        "machine": AMD}))


def test_each_section_keeps_its_machine_through_later_parts(tmp_path):
    sections, notes = _part(merge.Previous(), ["A", "B"], INTEL)
    assert sections["A"]["machine"] == INTEL and notes == []

    _saved(tmp_path, sections)
    sections, notes = _part(merge.load(str(tmp_path), "full", ["topk"]), ["topk"], AMD)
    assert sections["A"]["machine"] == INTEL and sections["topk"]["machine"] == AMD
    assert notes == ["Sections ran with different CPU: Intel Xeon for A, B; AMD EPYC for topk: compare them with care."]

    # A third part on the same host as the second still says where A and B ran: the note is made
    # from every section's machine, not from the last part's alone.
    _saved(tmp_path, sections)
    sections, notes = _part(merge.load(str(tmp_path), "full", ["B"]), ["B"], AMD)
    assert sections["A"]["machine"] == INTEL and sections["B"]["machine"] == AMD
    assert notes == ["Sections ran with different CPU: Intel Xeon for A; AMD EPYC for topk, B: compare them with care."]


def test_a_section_without_a_recorded_machine_is_named():
    old = _section("--only A")  # saved before sections kept their machine
    sections, notes = _part(merge.Previous(sections={"A": old}), ["topk"], AMD)
    assert "machine" not in sections["A"]
    assert notes == ["The machine of sections A was not recorded (they ran before each section kept its own): "
                     "they may have run on another host."]
    table = "\n".join(report.parts_table(sections))
    assert "| `--only A` | not recorded |" in table and "| `--only topk` | AMD EPYC |" in table


def test_every_differing_fact_is_noted_and_equal_ones_are_not():
    other = {**INTEL, "Java": "21.0.2"}
    sections, notes = _part(merge.Previous(sections=_part(merge.Previous(), ["A"], INTEL)[0]), ["C"], other)
    assert notes == ["Sections ran with different Java: 17.0.15 for A; 21.0.2 for C: compare them with care."]
