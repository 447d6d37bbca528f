"""bench/results/latest.md: machine, setup, the main table, targets, breakdown, sweeps, notes."""
import os
from typing import Callable, Dict, List, Optional

from bench import engines
from bench.config import CORES, GRID_LEVELS, WEIGHTS, Sizes
from bench.grid import EXTRA_METHODS
from bench.methods import METHODS, MODEL_LOADING
from bench.timing import Result

NAMES = {**METHODS, **EXTRA_METHODS}
ORDER = ["python_udf", "pandas_udf", "pandas_udf_iter", "map_in_pandas", "map_in_arrow",
         "treescore_fallback", "treescore_batched", "treescore_batched_exploded", "limit", "limit_engine"]
WORKLOAD_TITLES = {
    "A": "A: cached DataFrame, noop write",
    "B": "B: Parquet in, score, Parquet out (whole job)",
    "C": f"C: what-if grid, {GRID_LEVELS} discount levels per row (rows/s counts input rows)",
}


def _mib(value: int) -> str:
    return f"{value / 2**20:,.0f}" if value else "—"


def _find(results: List[Result], workload: str, method: str) -> Optional[Result]:
    return next((r for r in results if r.workload == workload and r.method == method and r.param is None), None)


def _ratio(result: Result, reference: Optional[Result]) -> str:
    if not result.ok or reference is None or not reference.ok:
        return "—"
    return f"{result.rows_per_second / reference.rows_per_second:.2f}x"


def _workers(result: Result) -> str:
    if not result.ok or result.method.startswith("limit"):
        return "—"
    return f"{(result.peak_bytes - result.peak_root_bytes) / 2**20:,.0f}"


def _cpu(result: Result) -> str:
    return f"{result.cpu_microseconds_per_row:,.0f}" if result.ok else "—"


def _rate(result: Result) -> str:
    return f"{result.rows_per_second:,.0f}" if result.ok else result.status


def main_table(results: List[Result]) -> List[str]:
    lines = ["| workload | method | rows timed | rows/s (median) | vs treescore batched | vs limit | "
             "CPU us/row | peak RSS MiB | of which Python workers | RSS before MiB | notes |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for workload in ("A", "B", "C"):
        reference, limit = _find(results, workload, "treescore_batched"), _find(results, workload, "limit")
        for method in ORDER:
            r = _find(results, workload, method)
            if r is None:
                continue
            lines.append(f"| {workload} | {NAMES[method]} | {r.rows:,} | {_rate(r)} | {_ratio(r, reference)} | "
                         f"{_ratio(r, limit)} | {_cpu(r)} | {_mib(r.peak_bytes)} | {_workers(r)} | "
                         f"{_mib(r.start_bytes)} | "
                         f"{r.note} |")
    return lines


def _faster(label: str, results: List[Result], workload: str, other: str, goal: float,
            method: str = "treescore_batched") -> str:
    """A target row: `method`'s rows/s at least `goal` times `other`'s in `workload`."""
    ts, them = _find(results, workload, method), _find(results, workload, other)
    if not (ts and them and ts.ok and them.ok):
        return f"| {label} | — | not measured | | |"
    actual = ts.rows_per_second / them.rows_per_second
    return f"| {label} | {actual:.2f}x | {'PASS' if actual >= goal else 'MISS'} | | |"


def targets(results: List[Result]) -> List[str]:
    ts, limit = _find(results, "A", "treescore_batched"), _find(results, "A", "limit")
    mip, mia = _find(results, "A", "map_in_pandas"), _find(results, "A", "map_in_arrow")
    lines = ["| target (workload A unless named) | actual (rows/s ratio) | result | same ratio by CPU time per row (reference) | "
             "most any method calling LightGBM's predict can reach (the limit's ratio) |",
             "|---|---:|---|---:|---:|"]

    def speed(label, other, goal):
        if ts and other and ts.ok and other.ok:
            actual = ts.rows_per_second / other.rows_per_second
            by_cpu = other.cpu_microseconds_per_row / ts.cpu_microseconds_per_row if ts.cpu_seconds else float("nan")
            # The limit is LightGBM's own predict on data already in memory: no method that calls it
            # can go faster, so limit / other bounds what any such method can show against `other`.
            ceiling = f"{limit.rows_per_second / other.rows_per_second:.2f}x" if limit and limit.ok else "—"
            lines.append(f"| {label} | {actual:.2f}x | {'PASS' if actual >= goal else 'MISS'} | {by_cpu:.2f}x | "
                         f"{ceiling} |")
        else:
            lines.append(f"| {label} | — | not measured | — | — |")

    lines.append(_faster("workload C: treescore batched >= 10x mapInPandas", results, "C", "map_in_pandas", 10))
    one = next((r for r in results if r.workload == "C" and r.param == 0), None)
    for fifteen in [r for r in results if r.workload == "C" and r.param == 15] or [None]:
        label = f"a {fifteen.note if fifteen else '15-point grid'} costs <= 3x one score of the same rows"
        if one and fifteen and one.ok and fifteen.ok:
            cost = fifteen.median_seconds / one.median_seconds
            lines.append(f"| {label} | {cost:.2f}x | {'PASS' if cost <= 3 else 'MISS'} | | |")
        else:
            lines.append(f"| {label} | — | not measured | | |")
    speed("treescore batched >= 3x the limit (LightGBM's predict in memory)", limit, 3.0)
    speed("treescore batched >= 4x mapInPandas", mip, 4.0)
    speed("treescore batched >= 1.5x mapInArrow", mia, 1.5)
    lines.append(_faster("workload B: treescore batched >= 5x mapInArrow", results, "B", "map_in_arrow", 5))
    if ts and mip and ts.ok and mip.ok:
        actual = ts.peak_bytes / mip.peak_bytes
        lines.append(f"| treescore peak RSS <= mapInPandas peak RSS | {_mib(ts.peak_bytes)} vs "
                     f"{_mib(mip.peak_bytes)} MiB ({actual:.2f}x) | {'PASS' if actual <= 1 else 'MISS'} | | |")
    else:
        lines.append("| treescore peak RSS <= mapInPandas peak RSS | — | not measured | | |")
    return lines


def outside_engine_target(diagnostics: Dict) -> List[str]:
    """The columnar path's target: on A, the time outside the engines per row and score call at
    most a third of reading rows' (the input every run had before the columnar path)."""
    label = "A: time outside the engines, reading column vectors <= 1/3 of reading rows (same run)"
    paths = (diagnostics.get("breakdown_A") or {}).get("paths", {})
    if not all(p.get("metrics") for p in paths.values()) or set(paths) != {"columns", "rows"}:
        return [f"| {label} | — | not measured | | |"]
    outside = {k: p["task_run_seconds"] - p["metrics"]["nativeTime"] / 1e9 for k, p in paths.items()}
    share = outside["columns"] / outside["rows"]
    return [f"| {label} | {share:.2f}x | {'PASS' if share <= 1 / 3 else 'MISS'} | | |"]


def grid_cost_table(results: List[Result]) -> List[str]:
    one = next((r for r in results if r.workload == "C" and r.param == 0), None)
    grids = sorted((r for r in results if r.workload == "C" and r.param), key=lambda r: r.param)
    if one is None or not one.ok or not grids:
        return ["Not measured in this run (it is part of section C)."]
    lines = [f"One score of the same {one.rows:,} cached rows: {one.median_seconds:.2f} s "
             f"({_rate(one)} rows/s).", "",
             "| grid | grid seconds (median) | input rows/s | points/s | cost / one score | CPU us/row |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in grids:
        cost = f"{r.median_seconds / one.median_seconds:.2f}x" if r.ok else "—"
        points = f"{r.rows * r.param / r.median_seconds:,.0f}" if r.ok else "—"
        lines.append(f"| {r.note} | {r.median_seconds if r.ok else float('nan'):.2f} | {_rate(r)} | {points} | {cost} | "
                     f"{_cpu(r)} |")
    return lines


WORKLOAD_INPUT = {"A": "workload A's {rows:,} cached rows (the in-memory columnar cache, noop output)",
                  "B": "workload B's {rows:,} Parquet rows (the scan and scoring; the Parquet write of B's timed runs is "
                       "not part of this plan)"}


def breakdown(results: List[Result], diagnostics: Dict) -> List[str]:
    """Where treescore batched's task time goes in A and B, for each input path, split into the
    input (scan), feature writes, the engine and output, from the BatchScore node's metrics."""
    lines = []
    for workload in ("A", "B"):
        info = diagnostics.get(f"breakdown_{workload}")
        if not info or not all(p.get("metrics") for p in info["paths"].values()):
            lines += [f"No BatchScore metrics were read for {workload} (the run failed or the rule did not fire).", ""]
            continue
        rows, calls = info["rows"], info["calls"]
        lines += [f"Extra runs of treescore batched over {WORKLOAD_INPUT[workload].format(rows=rows)}, executing the "
                  "query's own plan (`queryExecution().toRdd().count()`) once reading column vectors and once with "
                  "`spark.treescore.columnar.enabled=false`, reading rows; then the BatchScore node's SQL metrics and "
                  "the stages' task times from Spark's status store. Seconds are summed over tasks.", "",
                  "| input read as | task run time | input (scan, and the row copies on rows) | feature writes | "
                  "the engines | output and the rest | outside the engines, us per row | per row and score call | "
                  "feature values copied / read in place |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        outside = {}
        for path, p in info["paths"].items():
            m, run = p["metrics"], p["task_run_seconds"]
            scan, features, native = m["inputTime"] / 1e9, m["featureWriteTime"] / 1e9, m["nativeTime"] / 1e9
            rest = run - scan - features - native - m["modelLoadTime"] / 1e9
            outside[path] = (run - native) / rows * 1e6
            lines.append(f"| {p['input_path']} | {run:.2f} s | {scan:.2f} s | {features:.2f} s | {native:.2f} s | "
                         f"{rest:.2f} s | {outside[path]:.2f} | {outside[path] / calls:.2f} | "
                         f"{m['featureValuesWritten']:,} / {m['featureValuesInPlace']:,} |")
        if "columns" in outside and "rows" in outside:
            lines += ["", f"Outside the engines, reading column vectors costs {outside['columns'] / outside['rows']:.2f}x "
                          "what reading rows costs in the same run."]
        lines.append("")
    one, two = diagnostics.get("limit_one_thread_rows_per_second"), diagnostics.get("limit_rows_per_second")
    rows_a = (diagnostics.get("breakdown_A") or {}).get("rows")
    if one and rows_a:
        lines.append(f"LightGBM's own predict of A's rows on 1 thread takes {rows_a / one:.2f} s (what the engine time "
                     "was when every call ran on LightGBM's engine).")
    if one and two:
        lines.append(f"LightGBM predict rows/s, 1 thread vs {CORES} threads: {one:,.0f} vs {two:,.0f} ({two / one:.2f}x).")
    plans = diagnostics.get("plans", {})
    lines += ["", f"Plans: batched has a BatchScore node: {plans.get('batched_has_BatchScore')}; "
                  f"rule off has one: {plans.get('fallback_has_BatchScore')}."]
    return lines


SHAPE_METHODS = ("treescore_batched", "map_in_pandas", "map_in_arrow", "limit", "limit_engine")


def shapes_table(results: List[Result]) -> List[str]:
    """Workload A on the other model shapes: each method's rows/s against mapInPandas and mapInArrow."""
    measured = [r for r in results if r.workload == "shapes"]
    if not measured:
        return ["Not measured in this run (`python -m bench --only shapes`)."]
    lines = ["| model | method | rows/s (median) | vs mapInPandas | vs mapInArrow | CPU us/row | peak RSS MiB |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for shape in dict.fromkeys(r.note for r in measured):
        of = {r.method: r for r in measured if r.note == shape}
        for method in (m for m in SHAPE_METHODS if m in of):
            r = of[method]
            lines.append(f"| {shape} | {NAMES[method]} | {_rate(r)} | {_ratio(r, of.get('map_in_pandas'))} | "
                         f"{_ratio(r, of.get('map_in_arrow'))} | {_cpu(r)} | {_mib(r.peak_bytes)} |")
    return lines


def cascade_table(results: List[Result], diagnostics: Dict) -> List[str]:
    """The expensive classifier alone against the cascade Cascade.fit made for it, on the same
    cached rows, then what the cascade's outputs measured: agreement, escalation, exactness."""
    measured = {r.method: r for r in results if r.workload == "cascade"}
    if not measured:
        return ["Not measured in this run (`python -m bench --only cascade`)."]
    alone = measured.get("expensive")
    lines = ["| scorer | rows timed | rows/s (median) | vs the expensive model alone | CPU us/row | peak RSS MiB |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in (measured[k] for k in ("expensive", "cascade") if k in measured):
        lines.append(f"| {r.note} | {r.rows:,} | {_rate(r)} | {_ratio(r, alone)} | {_cpu(r)} | {_mib(r.peak_bytes)} |")
    info = diagnostics.get("cascade")
    if not info:
        return lines + ["", "The section stopped before its outputs were checked (see the notes)."]
    fit, shape = info["fit"], info["expensive"]
    escalation = (f"{info['escalation_rate']:.2%} ({info['escalated_rows']:,} rows)" if info["escalated_rows"] is not None
                  else "not read")
    lines += ["", f"The expensive model: a binary classifier, {shape['trees']} trees x {shape['leaves']} leaves on "
                  f"{shape['features']} features. Cascade.fit (its defaults; target agreement {info['target_agreement']} "
                  f"by class at 0.5) took {fit['seconds']:.1f} s on {fit['sample_rows']:,} sample rows: a cheap model of "
                  f"{fit['cheap_trees']} trees on {len(fit['features'])} features ({', '.join(fit['features'])}), "
                  f"accepting its output below {fit['accept_below']:.4g} or above {fit['accept_above']:.4g}.", "",
              "| over the scored rows | measured | Cascade.fit's estimate on its held-out rows |", "|---|---:|---:|",
              f"| agreement with the expensive model's Booster.predict (same side of 0.5), all {info['rows']:,} rows | "
              f"{info['agreement']:.2%} | {fit['agreement']:.2%} ({fit['held_out_rows']:,} rows) |",
              f"| escalation rate (BatchScore's rows escalated by cascades) | {escalation} | {fit['escalation_rate']:.2%} |",
              "| cascade outputs bit-identical to a NumPy cascade (cheap and expensive Booster.predict, the thresholds) | "
              f"{info['cascade_identical_to_reference_share']:.2%} | |",
              f"| the expensive model alone: outputs bit-identical to Booster.predict | "
              f"{info['expensive_identical_share']:.2%} | |"]
    return lines


def topk_table(results: List[Result], diagnostics: Dict) -> List[str]:
    """The top-K query scored in full then sorted, with exact selection, and approximately, over
    the same cached rows, then by the whole ensemble and by a route to its members, in full and
    with selection; then whether the rows and scores are the top k of Booster.predict."""
    measured = {r.method: r for r in results if r.workload == "topk"}
    if not measured:
        return ["Not measured in this run (`python -m bench --only topk`)."]
    full = measured.get("full")
    lines = ["| method | rows | seconds (median) | rows/s | vs full score + sort | CPU us/row | peak RSS MiB |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    # The ensemble's rows are compared with the ensemble's own full score + sort.
    bases = {"full": full, "selected": full, "one_tree": full, "approximate": full, "ensemble_full": measured.get("ensemble_full"),
             "ensemble_selected": measured.get("ensemble_full"), "route_full": measured.get("route_full"),
             "route_selected": measured.get("route_full")}
    for method, base in bases.items():
        r = measured.get(method)
        if r is None:
            continue
        seconds = f"{r.median_seconds:.2f}" if r.ok else "—"
        lines.append(f"| {r.note} | {r.rows:,} | {seconds} | {_rate(r)} | {_ratio(r, base)} | {_cpu(r)} | "
                     f"{_mib(r.peak_bytes)} |")
    info = diagnostics.get("topk")
    if not info:
        return lines + ["", "The section stopped before its rows were checked (see the notes)."]
    approx = info["approximate"]
    share = f"{info['trees_evaluated_share']:.1%}" if info["trees_evaluated_share"] is not None else "not read"
    yes = lambda b: "yes" if b else "**no**"  # noqa: E731
    lines += ["", f"Top {info['k']:,} of {info['rows']:,} rows: by the ensemble's first member in the first four "
              "rows, by the whole ensemble in the next two, by a route to its members (one per row) in the last two.", "",
              "| check | result |", "|---|---|",
              f"| exact selection: the same rows and score bits as the full score + sort | {yes(info['selected_equals_full'])} |",
              f"| both: the top {info['k']:,} of Booster.predict over every row, bit for bit | "
              f"{yes(info['selected_is_top'] and info['full_is_top'])} |",
              f"| exact selection: trees evaluated, of a full score's | {share} |",
              f"| exact selection: rows it did not pass on to the sort | {info['rows_dropped']:,} |",
              f"| approximate: cheap model | {approx['cheap_trees']} trees x {approx['cheap_leaves']} leaves on "
              f"{len(approx['cheap_features'])} features |",
              f"| approximate: rows filtered by the cheap model, of those scanned (candidates left for the member) | "
              f"{approx['rows_filtered']:,} of {approx['rows_scanned']:,} ({approx['candidates']:,}) |",
              f"| approximate: share of the exact top {info['k']:,} it found | {approx['recall']:.1%} |",
              f"| approximate: its scores are the expensive model's, bit for bit | {yes(approx['scores_exact'])} |"]
    lines += _pair_checks("ensemble", info.get("ensemble"), "its members' Booster.predict, combined in member order",
                          info["k"])
    lines += _pair_checks("route", info.get("route"), "Booster.predict of the member each row's key picks", info["k"])
    return lines


def _pair_checks(name: str, checked: Optional[Dict], reference: str, k: int) -> List[str]:
    """The check rows of a scorer timed in full and with selection: same rows and bits, both the
    top k of `reference`, and the share of a full score's trees that selection evaluated."""
    if not checked:
        return []
    yes = lambda b: "yes" if b else "**no**"  # noqa: E731
    share = f"{checked['trees_evaluated_share']:.1%}" if checked["trees_evaluated_share"] is not None else "not read"
    return [f"| {name}: exact selection gives the same rows and score bits as its full score + sort | "
            f"{yes(checked['selected_equals_full'])} |",
            f"| {name}: both are the top {k:,} of {reference} | {yes(checked['selected_is_top'] and checked['full_is_top'])} |",
            f"| {name}: trees evaluated, of a full score's | {share} |"]


# Predictions per timed row: C's rows are input rows, each scored at every grid level.
PREDICTIONS_PER_ROW = {"C": GRID_LEVELS}
DAILY_PREDICTIONS, WINDOW_HOURS = 6e9, 4  # the talk's workload: 6 billion predictions a day


def _core_seconds_per_prediction(r: Result) -> float:
    return r.cpu_seconds / (r.rows * len(r.seconds) * PREDICTIONS_PER_ROW.get(r.workload, 1))


def cost_table(results: List[Result]) -> List[str]:
    """CPU core-hours per billion predictions, from each method's measured CPU time (its process
    tree: the JVM and its Python workers, or for the limits this process)."""
    lines = ["| workload | method | CPU us per prediction | core-hours per billion predictions | vs treescore batched |",
             "|---|---|---:|---:|---:|"]
    for workload in ("A", "B", "C"):
        reference = _find(results, workload, "treescore_batched")
        for method in ORDER:
            r = _find(results, workload, method)
            if r is None or not r.ok or not r.cpu_seconds:
                continue
            per = _core_seconds_per_prediction(r)
            versus = (f"{per / _core_seconds_per_prediction(reference):.1f}x" if reference and reference.ok
                      and reference.cpu_seconds else "—")
            lines.append(f"| {workload} | {NAMES[method]} | {per * 1e6:,.1f} | {per * 1e9 / 3600:,.2f} | {versus} |")
    return lines


def cores_needed(results: List[Result]) -> List[str]:
    """On paper: the cores each method needs for the talk's 6 billion predictions a day in a
    4-hour window, from C's measured CPU time per prediction (the talk's workload is curves)."""
    lines = [f"The talk's job: {DAILY_PREDICTIONS / 1e9:.0f} billion predictions a day (demand curves), scored "
             f"within a {WINDOW_HOURS}-hour window. Cores = predictions x CPU seconds per prediction / window "
             "seconds, from each method's CPU time in workload C (A's for comparison), as if every core ran as "
             "this machine's do and nothing else were needed: a lower bound on a cluster, where scheduling, "
             "shuffles and I/O add their share.", "",
             "| method | from C: cores | from A: cores |", "|---|---:|---:|"]
    for method in ORDER:
        cells = []
        for workload in ("C", "A"):
            r = _find(results, workload, method)
            if r is None or not r.ok or not r.cpu_seconds or method.startswith("limit"):
                cells.append("—")
            else:
                cells.append(f"{DAILY_PREDICTIONS * _core_seconds_per_prediction(r) / (WINDOW_HOURS * 3600):,.1f}")
        if any(c != "—" for c in cells):
            lines.append(f"| {NAMES[method]} | {cells[0]} | {cells[1]} |")
    return lines


SPARK35_NAMES = {"synapseml": "SynapseML 1.1.3 (VectorAssembler, LightGBMRegressionModel per member)",
                 "treescore_batched": "treescore batched (the Spark 3.5 jar)", "map_in_pandas": "mapInPandas",
                 "treescore": "treescore, kind=\"contrib\" (its engine's TreeSHAP)"}


def _agreement_cell(found: Optional[Dict]) -> str:
    if not found:
        return "—"
    if "error" in found:
        return found["error"]
    return f"{found['max_abs_diff']:.3g} max abs diff, {found['identical_share']:.2%} bit-identical ({found['values']:,} values)"


def synapse_table(results: List[Result], agree: Dict, diagnostics: Dict) -> List[str]:
    """A and B in one Spark 3.5 session: SynapseML, treescore's 3.5 jar and mapInPandas, with
    each method's agreement with Booster.predict, then SHAP values."""
    if not any(r.workload in ("A35", "B35", "SHAP35") for r in results):
        return ["Not measured in this run (`python -m bench --only synapseml`)."]
    info = diagnostics.get("synapseml", {})
    versions = info.get("versions", {})
    lines = [f"One Spark {versions.get('spark', '3.5')} session (`local[{CORES}]`) holding SynapseML "
             f"{versions.get('synapseml', '1.1.3')} and treescore's 3.5 jar, in a child process (bench/synapse.py); "
             "the same Parquet files and the same ensemble as A and B.", "",
             "| workload | method | rows/s (median) | vs SynapseML | vs mapInPandas | CPU us/row | "
             "core-hours per billion predictions | peak RSS MiB | agreement with Booster.predict (first rows) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for workload in ("A35", "B35", "SHAP35"):
        of = {r.method: r for r in results if r.workload == workload}
        for method, r in of.items():
            cost = f"{_core_seconds_per_prediction(r) * 1e9 / 3600:,.2f}" if r.ok and r.cpu_seconds else "—"
            found = (agree.get("A35" if workload != "SHAP35" else "SHAP35") or {}).get(method)
            lines.append(f"| {workload} | {SPARK35_NAMES.get(method, method)} | {_rate(r)} | "
                         f"{_ratio(r, of.get('synapseml'))} | {_ratio(r, of.get('map_in_pandas'))} | {_cpu(r)} | "
                         f"{cost} | {_mib(r.peak_bytes)} | {_agreement_cell(found) if workload != 'B35' else ''} |")
    shap = next((r.note for r in results if r.workload == "SHAP35" and r.note), "")
    if shap:
        lines += ["", f"SHAP35: {shap}."]
    shares = info.get("shap_task_time")
    if shares:
        lines += ["", "treescore's SHAP35 tasks, one extra run: " + ", ".join(
            f"{name} {100 * share:.0f}%" for name, share in shares.items()) + " of their run time."]
    mapped = (info.get("native_libraries") or {}).get("at the end", {})
    if mapped and "error" not in mapped:
        own = [os.path.basename(p.split(" ")[0]) for p in mapped.get("treescore", [])]
        lines += ["", f"LightGBM in the session's JVM at the end: treescore's {', '.join(own) or 'nothing'}; SynapseML's "
                      f"lib_lightgbm.so {mapped.get('synapseml lib_lightgbm.so copies', 0)} times (it loads a copy per "
                      "model and task). treescore's LightGBM has a soname of its own, so it never links to SynapseML's."]
    return lines


def synapse_targets(results: List[Result]) -> List[str]:
    return [_faster(f"{workload[0]} in one Spark 3.5 session: treescore batched >= 3x SynapseML", results, workload,
                    "synapseml", 3) for workload in ("A35", "B35")] + [
        _faster("SHAP values of A's member in one Spark 3.5 session: treescore >= 10x SynapseML's featuresShapCol",
                results, "SHAP35", "synapseml", 10, method="treescore")]


def shap_targets(results: List[Result]) -> List[str]:
    """In memory, one thread: treescore's TreeSHAP against LightGBM's, per shape (bench/shap.py)."""
    rows = []
    for shape, goal in ((engines.SHAPES[0].name, 10), (engines.SHAPES[2].name, 4)):
        of = {r.method: r for r in results if r.workload == "shap" and r.note == shape and r.param == 1}
        ts, them = of.get("treescore"), of.get("lightgbm")
        label = f"SHAP values in memory, 1 thread, {shape}: treescore >= {goal}x LightGBM's TreeSHAP"
        if not (ts and them and ts.ok and them.ok):
            rows.append(f"| {label} | — | not measured | | |")
            continue
        actual = ts.rows_per_second / them.rows_per_second
        rows.append(f"| {label} | {actual:.2f}x | {'PASS' if actual >= goal else 'MISS'} | | |")
    return rows


def agreement(agree: Dict[str, Dict]) -> List[str]:
    lines = ["| method | A: max abs diff vs LightGBM (256 rows) | C: max abs diff (16 rows x 15 levels) |",
             "|---|---:|---:|"]
    for method in ORDER:
        a, c = agree.get("A", {}).get(method), agree.get("C", {}).get(method)
        if a is None and c is None:
            continue
        fmt = lambda v: "—" if v is None else (v if isinstance(v, str) else f"{v:.3g}")  # noqa: E731
        lines.append(f"| {NAMES[method]} | {fmt(a)} | {fmt(c)} |")
    return lines


def sweep_table(results: List[Result], workload: str, label: str) -> List[str]:
    rows = [r for r in results if r.workload == workload]
    if not rows:  # a full run done in parts may not have reached this sweep yet
        return ["Not measured in this run."]
    lines = [f"| method | {label} | rows/s | ns/row (wall) | CPU us/row | peak RSS MiB | notes |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        ns = f"{1e9 / r.rows_per_second:,.0f}" if r.ok else "—"
        lines.append(f"| {NAMES[r.method]} | {r.param:,} | {_rate(r)} | {ns} | {_cpu(r)} | {_mib(r.peak_bytes)} | "
                     f"{r.note} |")
    return lines


def _against_lightgbm(measured: List[Result], identical: Dict, column: str,
                      name: Callable[[str, Result], str] = lambda shape, r: r.method) -> List[str]:
    """Per shape (the results' notes), each method's rows against LightGBM's 1 thread, with its
    share of outputs bit-identical to LightGBM's; a method not measured shows its status."""
    lines = [f"| model | {column} | threads | rows | rows/s (median) | vs LightGBM 1 thread | outputs identical to "
             "LightGBM | CPU us/row |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for shape in dict.fromkeys(r.note for r in measured):
        base = next((r for r in measured if r.note == shape and r.method == "lightgbm" and r.param == 1), None)
        for r in (r for r in measured if r.note == shape):
            share = identical.get(shape, {}).get(r.method)
            shared = f"{100 * share:.2f}%" if share is not None else "—"
            ratio = _ratio(r, base) if base is not None else "—"
            lines.append(f"| {shape} | {name(shape, r)} | {r.param or '—'} | {r.rows:,} | {_rate(r)} | {ratio} | "
                         f"{shared} | {_cpu(r)} |")
    return lines


def engines_table(results: List[Result], diagnostics: Dict) -> List[str]:
    """The native section: each shape's engines at 1 and 2 threads, against LightGBM's 1 thread."""
    measured = [r for r in results if r.workload == "engines"]
    if not measured:
        return ["Not measured in this run (`python -m bench --only engines`)."]
    layouts = diagnostics.get("engine_layouts", {})
    return _against_lightgbm(measured, diagnostics.get("engine_identical", {}), "engine", lambda shape, r: (
        f"treescore ({layouts.get(shape, '?')})" if r.method == "treescore" else r.method))


def shap_table(results: List[Result], diagnostics: Dict) -> List[str]:
    """The SHAP section: each shape's TreeSHAP methods against LightGBM's 1 thread, and what
    treescore's tables cost."""
    measured = [r for r in results if r.workload == "shap"]
    if not measured:
        return ["Not measured in this run (`python -m bench --only shap`)."]
    lines = _against_lightgbm(measured, diagnostics.get("shap_identical", {}), "method")
    tables = diagnostics.get("shap_tables", {})
    if tables:
        lines += ["", "treescore's TreeSHAP tables (built once per model and executor, on the first contribution call):",
                  "", "| model | tables | first build | leaves replayed | their share of LightGBM's work (replayed once per pattern in a block) | "
                  "`auto` gives contributions to |", "|---|---:|---:|---:|---:|---|"]
        for shape, t in tables.items():
            lines.append(f"| {shape} | {_mib(8 * t['table_addends'])} MiB | {t['build_seconds']:.1f} s | "
                         f"{t['replayed_leaves']:,} of {t['leaves']:,} | {100 * t['replayed_share']:.0f}% | {t['auto']} |")
    return lines


def setup(sizes: Sizes, ensemble) -> Dict[str, str]:
    scaling = ", ".join(f"{r:,}" for r in sizes.scaling_rows)
    lines = {
        "model": f"ensemble of 3 LightGBM regressors, {sizes.trees} trees each, {sizes.leaves} leaves max "
                 f"(mean {ensemble.mean_leaves():.1f} per tree), {sizes.features} float64 features, trained on "
                 f"{sizes.train_rows:,} rows; score = {' + '.join(f'{w}*m{i + 1}' for i, w in enumerate(WEIGHTS))}",
        "data": "a synthetic feature table (bench/data.py): a discount and a log-normal price, integer category "
                "codes (4 to 1,200 codes, Zipf-skewed), correlated blocks from latent factors with heavy-tailed "
                "and log-normal columns, 10% missing in every tenth column and 1% elsewhere (nulls); Parquet files "
                f"of {sizes.chunk_rows:,} rows, dictionary pages only for the low-cardinality columns; A and C "
                f"cached in partitions of about {sizes.partition_rows:,} rows; B and scaling read the files as "
                "spark.read splits them (default 128 MB splits)",
        "rows": f"A {sizes.rows_a:,}; B {sizes.rows_b:,}; C {sizes.rows_c:,} x {GRID_LEVELS} levels; batch sweep "
                f"{sizes.sweep_rows:,} in {CORES} partitions; scaling {scaling}; other model shapes "
                f"{sizes.rows_shapes:,}; cascade A's {sizes.rows_a:,}, fitted on {sizes.cascade_sample_rows:,} other rows; "
                f"top-K the best {sizes.topk_k:,} of {sizes.topk_rows:,}",
        "Spark": f"local[{CORES}], driver memory {sizes.driver_memory}, default Arrow batch 10,000 rows, "
                 "default treescore batch 8,192 rows and 1 native thread",
        "timing": (f"median of {sizes.runs} timed runs after one untimed warm-up run of the same method on "
                   f"{sizes.warm_rows:,} rows (the sampled Python UDF: on its sample; sweeps: one warm-up per "
                   "method, at the first point)") if sizes.warm_rows else f"{sizes.runs} timed run(s), no warm-up",
    }
    return lines


def parts_table(parts: Dict[str, Dict]) -> List[str]:
    """When, by which command and under what load each section ran (a full run may come in parts)."""
    lines = ["| section | finished | took | command | CPU | load average (1, 5, 15 min) and CPU pressure: start; end | "
             "parallel speed per core (2 processes vs 1) | JVM warm-up before it |",
             "|---|---|---:|---|---|---|---|---|"]
    order = ["A", "B", "C", "batch", "scaling", "engines", "shap", "shapes", "synapseml", "cascade", "topk"]
    for name, info in sorted(parts.items(), key=lambda item: order.index(item[0])):
        warm = info.get("jvm_warm_up")
        warm_text = (f"{warm['rounds']} rounds of treescore (batched and rule off) over {warm['rows']:,} rows "
                     f"({warm['seconds']:.0f} s)") if warm else "none"
        took = f"{info['seconds'] / 60:.0f} min" if info["seconds"] >= 120 else f"{info['seconds']:.0f} s"
        cpu = info.get("machine", {}).get("CPU", "not recorded")
        lines.append(f"| {name} | {info['date']} | {took} | `{info['command']}` | {cpu} | "
                     f"{info['load_start']}; {info['load_end']} | {info['parallel']} | {warm_text} |")
    return lines


def drift_note(results: List[Result]) -> List[str]:
    """treescore batched in A against the same rows and batch size later in the run (batch sweep)."""
    a = _find(results, "A", "treescore_batched")
    later = next((r for r in results if r.workload == "batch" and r.method == "treescore_batched"
                  and r.param == 8_192 and r.ok and r.rows == getattr(a, "rows", None)), None)
    if not (a and a.ok and later):
        return []
    return [f"Drift check: treescore batched with its default 8,192-row batches ran at {a.rows_per_second:,.0f} rows/s "
            f"({a.cpu_microseconds_per_row:,.0f} CPU us/row) in A and at {later.rows_per_second:,.0f} rows/s "
            f"({later.cpu_microseconds_per_row:,.0f} CPU us/row) on the same rows in the batch sweep, minutes later "
            "in the same JVM. A large gap means the JVM was still compiling during A."]


def method_notes(sizes: Sizes) -> List[str]:
    notes = [
        "Peak RSS: summed over the Spark JVM and every descendant process (PySpark daemon, Python workers), read "
        "from /proc every 50 ms during the timed runs, and split at the peak into the JVM and its Python workers; "
        "the limit's is this driver process's own RSS (it holds the feature matrix). 'RSS before' is the same sum "
        "just before the timed runs. Shared pages of forked workers count once per process.",
        "A full JVM GC runs before each Spark method so that G1 can return heap; the growth during a method's runs "
        "is then mostly the heap growing back under that method's allocation. Within each workload methods run in "
        "the order treescore batched, treescore rule off, mapInPandas, mapInArrow, pandas UDFs, Python UDF. In A, "
        "treescore runs before any Python worker exists; after that, idle workers (reused, as by default) stay "
        "alive and count toward every later peak, treescore's in B, C and the sweeps included: the 'of which "
        "Python workers' column shows how much.",
        "CPU us/row: user + system CPU time of the measured process tree over the timed runs (JVM with its JIT and "
        "GC threads, Python workers; for the limit, this process), per row. Unlike rows/s it barely changes when "
        "another tenant takes a core, so it is the steadier way to compare methods on a shared machine.",
        "All Python methods predict with num_threads=1 (Spark runs 2 tasks at once); treescore uses its default "
        "1 native thread per task; the limit uses 2 threads in one call.",
        "The rows/s of a sampled method is measured on its sample only.",
    ]
    if sizes.runs < 3:
        notes.append(f"{sizes.runs} timed run per measurement in {sizes.mode} mode: a plumbing check, not a "
                     "measurement.")
    if sizes.mode != "full":
        notes.append(f"{sizes.mode} mode: row counts are far below the full run's, so fixed costs (job planning and "
                     "code generation, task start, per-partition model loads, JIT compilation still going on in a "
                     "young JVM) weigh much more than at full size; use the full run for conclusions.")
    return notes


def write(path: str, *, run: Dict, machine: Dict, sizes: Sizes, setup: Dict, parts: Dict, results: List[Result],
          agree: Dict, diagnostics: Dict, plots: List[str], plot_note: str) -> None:
    out = [f"# treescore benchmark: {run['date']}", "",
           f"Mode `{sizes.mode}`. Last part: `{run['command']}`, {run['seconds'] / 60:.0f} min end to end, measured "
           f"with the code of commit {run.get('commit', 'not recorded')}. "
           "Measurements, not tests: nothing here passes or fails a build.", "", "## Machine", "",
           "The last part's; the next table names each section's CPU, and the notes say what else differed.", ""]
    out += [f"- {k}: {v}" for k, v in machine.items()]
    out += ["", "## When each section ran", "",
            "Before measuring, each part scores with treescore for a while so that the JVM's JIT compiler has "
            "mostly settled (the last column).", "", *parts_table(parts), "", "## Setup", ""]
    out += [f"- {k}: {v}" for k, v in setup.items()]
    out += ["", "Model loading per method:", ""]
    out += [f"- {NAMES[k]}: {v}" for k, v in MODEL_LOADING.items()]
    out += ["", "## Results", "", *[f"- {t}" for t in WORKLOAD_TITLES.values()], "", *main_table(results),
            "", "## Targets", "", *targets(results), *outside_engine_target(diagnostics), *synapse_targets(results), *shap_targets(results),
            f"| a full run of at most 90 minutes | {run['seconds'] / 60:.0f} min | "
            f"{'PASS' if run['seconds'] <= 90 * 60 else 'MISS'} (this part: `{run['command']}`) | | |", "", "## Where treescore's time goes (A and B)", "",
            *breakdown(results, diagnostics), "", "## What a grid costs (C)", "",
            "treescore's engine shares the work on the inputs that do not vary between a row's grid points; "
            "the grids vary the discount feature over the cached rows of C, and each array is written "
            "as is (not exploded).", "", *grid_cost_table(results), "", "## Engines in memory", "",
            "Each engine scores the same float64 matrix in this process, outside Spark (bench/engines.py).", "",
            *engines_table(results, diagnostics), "", "## SHAP values in memory", "",
            "Each method explains the same float64 matrix in this process, outside Spark (bench/shap.py); "
            "treescore's tables are built before the clock starts, as an executor keeps them.", "",
            *shap_table(results, diagnostics), "", "## Other model shapes (workload A)", "",
            "Workload A's cached rows scored by one model of each shape (its first columns of the same table).", "",
            *shapes_table(results), "", "## Automatic cascade (Cascade.fit, workload A's rows)", "",
            "An expensive binary classifier scored by treescore alone and as the second stage of the cascade "
            "Cascade.fit made for it (bench/cascade.py), over the same cached rows in the same run; then the cascade's "
            "outputs on every one of those rows against the expensive model's own Booster.predict.", "",
            *cascade_table(results, diagnostics), "", "## Top-K queries", "",
            "`ORDER BY score DESC LIMIT k` over cached rows (bench/topk.py): every row scored then sorted, the same "
            "query with treescore's exact top-K selection, treescore.top_k with a cheap model, and the whole ensemble's "
            "query in full and with selection, in the same run.", "",
            *topk_table(results, diagnostics), "", "## SynapseML, side by side (Spark 3.5)", "",
            *synapse_table(results, agree, diagnostics), "", "## What it costs", "",
            "CPU time is what each method's processes used over its timed runs (the Spark JVM with its Python "
            "workers; for the limits, this process), so it counts every core's work, not wall time.", "",
            *cost_table(results), "", "### The cores the talk's workload needs", "", *cores_needed(results), "",
            "## Agreement", "",
            "Each method's first scores against `Booster.predict` of the same rows: the largest absolute "
            "difference (0: equal values; the Spark 3.5 table above also counts bit-identical outputs).", "",
            *agreement(agree), "", "## Batch size sweep", "",
            "mapInPandas with `spark.sql.execution.arrow.maxRecordsPerBatch`, treescore with "
            "`spark.treescore.batch.rows`, over cached rows in one partition per core (so a batch can be as "
            "large as a partition).", "",
            *sweep_table(results, "batch", "rows per batch"), "", "## Scaling", "",
            "Rows read from Parquet (split as spark.read does), scored, noop-written.", "",
            *sweep_table(results, "scaling", "rows"), "", "## Plots", ""]
    out += [f"![{p}]({p})" for p in plots] or [plot_note]
    if plots and plot_note:
        out += ["", plot_note]
    out += ["", "## Notes", "", *[f"- {n}" for n in run["notes"]], ""]
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(out))
    os.replace(path + ".tmp", path)
