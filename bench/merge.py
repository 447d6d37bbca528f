"""--merge: a full run in parts. The full run takes hours on 2 cores, longer than one quiet
window; each part runs some sections and keeps the other sections' results from the
latest.json already in --out, so latest.md always shows every section measured so far,
with when and under what load each part ran."""
import json
import os
from dataclasses import dataclass, field
from typing import Dict, List, Tuple

from bench.timing import Result

# Which section measured each diagnostic: a part that reruns a section replaces them.
DIAGNOSTIC_SECTION = {"breakdown_A": "A", "breakdown_B": "B", "plans": "A", "limit_one_thread_rows_per_second": "A",
                      "limit_rows_per_second": "A", "engine_identical": "engines", "engine_layouts": "engines",
                      "shap_identical": "shap", "shap_tables": "shap",
                      "synapseml": "synapseml", "cascade": "cascade", "topk": "topk"}
# Workloads measured by a section of another name (results and agreement are kept by workload).
WORKLOAD_SECTION = {"A35": "synapseml", "B35": "synapseml", "SHAP35": "synapseml"}


@dataclass
class Previous:
    """What an earlier latest.json holds for the sections this part does not run (by default, nothing)."""
    results: List[Result] = field(default_factory=list)
    agreement: Dict = field(default_factory=dict)
    diagnostics: Dict = field(default_factory=dict)
    sections: Dict = field(default_factory=dict)


def load(out_dir: str, mode: str, rerun: List[str]) -> Previous:
    """The previous results of every section not in `rerun`; nothing if there is no latest.json.

    Refuses (SystemExit) to merge across modes: quick and full numbers side by side would
    read as one measurement.
    """
    path = os.path.join(out_dir, "latest.json")
    if not os.path.exists(path):
        return Previous()
    with open(path) as f:
        previous = json.load(f)
    if previous["sizes"]["mode"] != mode:
        raise SystemExit(f"--merge: {path} holds a {previous['sizes']['mode']} run and this is a {mode} run; "
                         "use another --out, or run without --merge to start over")
    kept = {name: info for name, info in previous.get("sections", {}).items() if name not in rerun}
    return Previous(
        results=[Result(**r) for r in previous["results"]
                 if WORKLOAD_SECTION.get(r["workload"], r["workload"]) in kept],
        agreement={w: found for w, found in previous["agreement"].items() if WORKLOAD_SECTION.get(w, w) in kept},
        diagnostics={k: v for k, v in previous["diagnostics"].items() if DIAGNOSTIC_SECTION.get(k) in kept},
        sections=kept)


def combine(previous: Previous, results: List[Result], agreement: Dict, diagnostics: Dict,
            sections: Dict, machine: Dict) -> Tuple[List[Result], Dict, Dict, Dict, List[str]]:
    """This part's results on top of the kept ones, plus notes on anything that differs between parts.

    Each of this part's sections records the machine it ran on, so that a report merged from parts
    run on different hosts says which section ran where, however many parts later.
    """
    for info in sections.values():
        info["machine"] = machine
    merged = {**previous.sections, **sections}
    return (previous.results + results, {**previous.agreement, **agreement},
            {**previous.diagnostics, **diagnostics}, merged, machine_notes(merged))


def machine_notes(sections: Dict) -> List[str]:
    """A note for each machine fact (CPU, OS, Java...) that is not the same for every section."""
    recorded = {name: info["machine"] for name, info in sections.items() if info.get("machine")}
    notes = []
    if recorded and len(recorded) < len(sections):
        unknown = sorted(set(sections) - set(recorded))
        notes.append("The machine of sections " + ", ".join(unknown) + " was not recorded (they ran before "
                     "each section kept its own): they may have run on another host.")
    for fact in dict.fromkeys(k for m in recorded.values() for k in m):
        by_value: Dict[str, List[str]] = {}
        for name, found in recorded.items():
            by_value.setdefault(str(found.get(fact, "not recorded")), []).append(name)
        if len(by_value) > 1:
            notes.append(f"Sections ran with different {fact}: " + "; ".join(
                f"{value} for {', '.join(names)}" for value, names in by_value.items()) + ": compare them with care.")
    return notes
