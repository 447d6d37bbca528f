"""The benchmark suite (bench/) runs end to end at tiny sizes and reports every method.

Its numbers are not checked: the suite measures, it does not pass or fail. This only guards
the plumbing, with whatever this Python has (matplotlib and psutil may be missing).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

from bench import engines, merge, shap as bench_shap

ROOT = Path(__file__).resolve().parents[1]

# The names latest.md gives the methods (bench/methods.py METHODS).
METHOD_NAMES = [
    "Python UDF (row at a time)",
    "pandas UDF (Series to Series)",
    "pandas UDF (Iterator of Series)",
    "mapInPandas",
    "mapInArrow",
    "treescore, rule off (row at a time)",
    "treescore batched",
    "limit: LightGBM predict in memory",
    "limit: treescore's engine in memory",
]


def _bench(out):
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--smoke", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return json.loads((out / "latest.json").read_text())


def test_bench_smoke_runs_and_lists_every_method(tmp_path):
    first = _bench(tmp_path)
    report = (tmp_path / "latest.md").read_text()
    missing = [name for name in METHOD_NAMES if f"| {name} |" not in report]
    assert not missing, f"latest.md does not list {missing}"
    # The grid-cost table: one score, then a row per grid size and one with a derived input.
    grids = [r["note"] for r in first["results"] if r["workload"] == "C" and r["param"]]
    assert grids == ["1-point grid", "5-point grid", "15-point grid", "29-point grid",
                     "15-point grid, derived f001 = f001 * (1 - f000)"]
    assert all(f"| {note} |" in report for note in grids)
    assert "a 15-point grid costs <= 3x one score of the same rows" in report
    # Where the time goes: A and B, each read as column vectors and as rows.
    breakdown = report.split("## Where treescore's time goes", 1)[1].split("\n## ", 1)[0]
    assert breakdown.count("| column vectors |") == 2 and breakdown.count("| rows |") == 2, breakdown
    # The other model shapes, each with treescore and the Python methods.
    shapes = {(r["note"], r["method"]) for r in first["results"] if r["workload"] == "shapes" and r["status"] == "ok"}
    assert len({note for note, _ in shapes}) == len(engines.SHAPES) - 1 and all(
        (note, m) in shapes for note, _ in shapes for m in ("treescore_batched", "map_in_pandas", "map_in_arrow"))
    # Engines in memory: LightGBM and treescore on every shape at 1 and 2 threads, treescore
    # bit-identical; the peers the bench extra installs measured too, but those that refuse a
    # shape reported as failed on it: oneDAL rejects categorical splits, oneDAL and tl2cgen linear trees.
    measured = [r for r in first["results"] if r["workload"] == "engines"]
    status = {(r["note"], r["method"], r["param"]): r["status"] for r in measured}
    shapes = {note for note, _, _ in status}
    categorical = {s for s in shapes if s.startswith("categorical")}
    linear = {s for s in shapes if s.startswith("linear")}
    assert len(shapes) == len(engines.SHAPES) and len(categorical) == len(linear) == 1
    for s in shapes:
        refusing = ("onedal",) if s in categorical else ("onedal", "tl2cgen") if s in linear else ()
        for m in ("lightgbm", "treescore", "lleaves", "tl2cgen", "onnxruntime", "onedal"):
            if m in refusing:
                assert status[(s, m, None)].startswith("failed: "), (s, m)
            else:
                assert status[(s, m, 1)] == status[(s, m, 2)] == "ok", (s, m)
        assert first["diagnostics"]["engine_identical"][s]["treescore"] == 1.0
        assert 0 <= first["diagnostics"]["engine_identical"][s]["onnxruntime"] <= 1
    # SHAP values in memory: LightGBM's and treescore's TreeSHAP on every shape but the 1,000 small
    # trees and the linear ones, at 1 and 2 threads,
    # treescore's bit-identical, with what its tables cost; FastTreeSHAP measured or "not installed".
    shap = [r for r in first["results"] if r["workload"] == "shap"]
    measured = {(r["note"], r["method"], r["param"]) for r in shap if r["status"] == "ok"}
    shapes = {note for note, _, _ in measured}
    assert len(shapes) == len(bench_shap.SHAPES) and all((s, m, t) in measured for s in shapes for m in ("lightgbm", "treescore")
                                    for t in (1, 2))
    assert all(r["status"] == "ok" or r["status"].startswith("not installed") for r in shap)
    assert all(first["diagnostics"]["shap_identical"][s]["treescore"] == 1.0 for s in shapes)
    assert set(first["diagnostics"]["shap_tables"]) == shapes
    section = report.split("## SHAP values in memory", 1)[1].split("\n## ", 1)[0]
    assert "| `auto` gives contributions to |" in section and "treescore >= 10x LightGBM's TreeSHAP" in report
    # SynapseML beside treescore's 3.5 jar in one Spark 3.5 session: every method measured, and
    # treescore's scores and contributions bit-identical to Booster.predict there, SynapseML's
    # LightGBM loaded first.
    spark35 = {(r["workload"], r["method"]): r["status"] for r in first["results"] if r["workload"].endswith("35")}
    assert spark35 == {**{(w, m): "ok" for w in ("A35", "B35") for m in ("synapseml", "treescore_batched", "map_in_pandas")},
                       ("SHAP35", "synapseml"): "ok", ("SHAP35", "treescore"): "ok"}
    assert first["agreement"]["A35"]["treescore_batched"]["identical_share"] == 1.0
    assert first["agreement"]["SHAP35"]["treescore"]["identical_share"] == 1.0
    # The cascade: the expensive classifier alone and the cascade Cascade.fit made for it, timed
    # on the same rows, and the cascade's outputs over those rows checked against Booster.predict.
    cascade = {r["method"]: r for r in first["results"] if r["workload"] == "cascade"}
    assert {m: r["status"] for m, r in cascade.items()} == {"expensive": "ok", "cascade": "ok"}
    assert cascade["expensive"]["rows"] == cascade["cascade"]["rows"]
    checked = first["diagnostics"]["cascade"]
    assert checked["expensive_identical_share"] == 1.0 and checked["cascade_identical_to_reference_share"] == 1.0
    assert checked["escalated_rows"] == checked["reference_escalated_rows"]  # the operator's count, NumPy's
    assert 0 < checked["agreement"] <= 1 and checked["fit"]["agreement"] >= checked["target_agreement"]
    section = report.split("## Automatic cascade", 1)[1].split("\n## ", 1)[0]
    assert "| treescore, the expensive model alone |" in section and "| treescore, the fitted cascade |" in section
    assert f"{checked['agreement']:.2%}" in section and f"({checked['escalated_rows']:,} rows)" in section

    # Top-K: the full score + sort, exact selection, the query's fixed part (one tree) and the
    # approximate mode timed on the same rows, then the ensemble and a route in full and with
    # selection; exact selection gives the full sort's rows and score bits, both Booster.predict's
    # top k.
    topk = {r["method"]: r for r in first["results"] if r["workload"] == "topk"}
    assert {m: r["status"] for m, r in topk.items()} == {"full": "ok", "selected": "ok", "one_tree": "ok",
                                                         "approximate": "ok", "ensemble_full": "ok",
                                                         "ensemble_selected": "ok", "route_full": "ok",
                                                         "route_selected": "ok"}
    checked = first["diagnostics"]["topk"]
    assert checked["selected_equals_full"] and checked["selected_is_top"] and checked["full_is_top"]
    whole = checked["ensemble"]
    assert whole["selected_equals_full"] and whole["selected_is_top"] and whole["full_is_top"]
    assert 0 < whole["trees_evaluated_share"] <= 1
    route = checked["route"]
    assert route["selected_equals_full"] and route["selected_is_top"] and route["full_is_top"]
    assert 0 < route["trees_evaluated_share"] <= 1
    assert 0 < checked["trees_evaluated_share"] <= 1 and checked["approximate"]["scores_exact"]
    approximate = checked["approximate"]
    assert approximate["candidates"] == checked["k"] * approximate["oversample"]
    assert approximate["rows_filtered"] == checked["rows"] - approximate["candidates"]
    section = report.split("## Top-K queries", 1)[1].split("\n## ", 1)[0]
    assert "| exact top-K selection (the default) |" in section and "| yes |" in section
    assert "| the query's fixed part: one tree, every row scored, then sorted |" in section
    assert "| the ensemble: exact top-K selection |" in section and "**no**" not in section
    assert "| the route: exact top-K selection |" in section

    # A part run with --merge keeps, from the latest.json already in --out, everything of the
    # sections it does not rerun: their results, agreement, diagnostics and section records.
    kept = merge.load(str(tmp_path), first["sizes"]["mode"], ["scaling"])
    assert [r.workload for r in kept.results] == [r["workload"] for r in first["results"] if r["workload"] != "scaling"]
    assert set(kept.sections) == set(first["sections"]) - {"scaling"} and kept.sections["A"] == first["sections"]["A"]
    assert kept.agreement == first["agreement"] and kept.diagnostics == first["diagnostics"]

    # --render measures nothing and rewrites the same report from latest.json.
    (tmp_path / "latest.md").write_text("stale")
    rendered = subprocess.run([sys.executable, "-m", "bench", "--render", "--out", str(tmp_path)],
                              cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert rendered.returncode == 0, rendered.stderr[-4000:]
    assert (tmp_path / "latest.md").read_text() == report
