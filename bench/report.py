"""bench/results/latest.md: machine, setup, the main table, targets, breakdown, sweeps, notes."""
import os
from typing import Dict, List, Optional

from bench.config import CORES, GRID_LEVELS, Sizes
from bench.grid import EXTRA_METHODS
from bench.methods import METHODS, MODEL_LOADING
from bench.timing import Result

NAMES = {**METHODS, **EXTRA_METHODS}
ORDER = ["python_udf", "pandas_udf", "pandas_udf_iter", "map_in_pandas", "map_in_arrow",
         "treescore_fallback", "treescore_batched", "treescore_batched_exploded", "limit"]
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


def _rate(result: Result) -> str:
    return f"{result.rows_per_second:,.0f}" if result.ok else result.status


def main_table(results: List[Result]) -> List[str]:
    lines = ["| workload | method | rows timed | rows/s (median) | vs treescore batched | vs limit | "
             "peak RSS MiB | RSS before MiB | notes |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for workload in ("A", "B", "C"):
        reference, limit = _find(results, workload, "treescore_batched"), _find(results, workload, "limit")
        for method in ORDER:
            r = _find(results, workload, method)
            if r is None:
                continue
            lines.append(f"| {workload} | {NAMES[method]} | {r.rows:,} | {_rate(r)} | {_ratio(r, reference)} | "
                         f"{_ratio(r, limit)} | {_mib(r.peak_bytes)} | {_mib(r.start_bytes)} | {r.note} |")
    return lines


def targets(results: List[Result]) -> List[str]:
    ts, limit = _find(results, "A", "treescore_batched"), _find(results, "A", "limit")
    mip, mia = _find(results, "A", "map_in_pandas"), _find(results, "A", "map_in_arrow")
    lines = ["| target (workload A) | actual | result |", "|---|---:|---|"]

    def speed(label, other, goal):
        if ts and other and ts.ok and other.ok:
            actual = ts.rows_per_second / other.rows_per_second
            lines.append(f"| {label} | {actual:.2f}x | {'PASS' if actual >= goal else 'MISS'} |")
        else:
            lines.append(f"| {label} | — | not measured |")

    speed("treescore batched >= 0.85x the limit", limit, 0.85)
    speed("treescore batched >= 2x mapInPandas", mip, 2.0)
    speed("treescore batched >= 1.5x mapInArrow", mia, 1.5)
    if ts and mip and ts.ok and mip.ok:
        actual = ts.peak_bytes / mip.peak_bytes
        lines.append(f"| treescore peak RSS <= mapInPandas peak RSS | {_mib(ts.peak_bytes)} vs "
                     f"{_mib(mip.peak_bytes)} MiB ({actual:.2f}x) | {'PASS' if actual <= 1 else 'MISS'} |")
    else:
        lines.append("| treescore peak RSS <= mapInPandas peak RSS | — | not measured |")
    return lines


def breakdown(results: List[Result], diagnostics: Dict) -> List[str]:
    info = diagnostics.get("breakdown")
    if not info or not info.get("metrics"):
        return ["No BatchScore metrics were read (the run failed or the rule did not fire)."]
    m, wall, rows = info["metrics"], info["wall_seconds"], info["rows"]
    slot = wall * info["cores"]
    native = m["nativeTime"] / 1e9
    load = m["modelLoadTime"] / 1e9
    lines = [
        f"One extra run of treescore batched over workload A's {rows:,} cached rows, executing the "
        f"query's own plan (`queryExecution().toRdd().count()`) and reading the BatchScore node's SQL metrics:",
        "",
        "| | value |", "|---|---:|",
        f"| wall time | {wall:.2f} s |",
        f"| task slot time (wall x {info['cores']} cores) | {slot:.2f} s |",
        f"| rows scored / batches | {m['numOutputRows']:,} / {m['numBatches']:,} |",
        f"| native scoring time (sum over tasks; 3 native calls per batch) | {native:.2f} s "
        f"({native / slot:.0%} of slot time) |",
        f"| model load time (sum over tasks) | {load:.3f} s |",
        f"| everything else: cache scan, row copies, feature writes, projection | {slot - native - load:.2f} s "
        f"({(slot - native - load) / slot:.0%}) |",
    ]
    limit = _find(results, "A", "limit")
    if limit and limit.ok:
        thread_seconds = limit.median_seconds * CORES * rows / limit.rows
        lines.append(f"| LightGBM's own predict of the same rows (limit median x {CORES} threads) | "
                     f"{thread_seconds:.2f} thread-s |")
    one, two = diagnostics.get("limit_one_thread_rows_per_second"), diagnostics.get("limit_rows_per_second")
    if one and two:
        lines.append(f"| LightGBM predict, 1 thread vs {CORES} threads (rows/s) | {one:,.0f} vs {two:,.0f} "
                     f"({two / one:.2f}x) |")
    plans = diagnostics.get("plans", {})
    lines += ["", f"Plans: batched has a BatchScore node: {plans.get('batched_has_BatchScore')}; "
                  f"rule off has one: {plans.get('fallback_has_BatchScore')}."]
    return lines


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
    lines = [f"| method | {label} | rows/s | ns/row | peak RSS MiB | notes |", "|---|---:|---:|---:|---:|---|"]
    for r in rows:
        ns = f"{1e9 / r.rows_per_second:,.0f}" if r.ok else "—"
        lines.append(f"| {NAMES[r.method]} | {r.param:,} | {_rate(r)} | {ns} | {_mib(r.peak_bytes)} | {r.note} |")
    return lines


def write(path: str, *, run: Dict, machine: Dict, sizes: Sizes, setup: Dict, results: List[Result],
          agree: Dict, diagnostics: Dict, plots: List[str], plot_note: str) -> None:
    out = [f"# treescore benchmark: {run['date']}", "",
           f"Mode `{sizes.mode}` (`{run['command']}`), {run['seconds']:.0f} s end to end. "
           "Measurements, not tests: nothing here passes or fails a build.", "", "## Machine", ""]
    out += [f"- {k}: {v}" for k, v in machine.items()]
    out += [f"- load average (1, 5, 15 min) at start: {run['load_start']}; at end: {run['load_end']}", "",
            "## Setup", ""]
    out += [f"- {k}: {v}" for k, v in setup.items()]
    out += ["", "Model loading per method:", ""]
    out += [f"- {NAMES[k]}: {v}" for k, v in MODEL_LOADING.items()]
    out += ["", "## Results", "", *[f"- {t}" for t in WORKLOAD_TITLES.values()], "", *main_table(results),
            "", "## Targets", "", *targets(results), "", "## Where treescore's time goes (A)", "",
            *breakdown(results, diagnostics), "", "## Agreement", "",
            "Each method's first scores against `Booster.predict` of the same rows (0 means bit-identical).", "",
            *agreement(agree), "", "## Batch size sweep", "",
            "mapInPandas with `spark.sql.execution.arrow.maxRecordsPerBatch`, treescore with "
            "`spark.treescore.batch.rows`, over workload A's cached rows coalesced to one partition per core.", "",
            *sweep_table(results, "batch", "rows per batch"), "", "## Scaling", "",
            "Rows read from Parquet (one partition per file), scored, noop-written.", "",
            *sweep_table(results, "scaling", "rows"), "", "## Plots", ""]
    out += [f"![{p}]({p})" for p in plots] or [plot_note]
    if plots and plot_note:
        out += ["", plot_note]
    out += ["", "## Notes", "", *[f"- {n}" for n in run["notes"]], ""]
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(out))
    os.replace(path + ".tmp", path)
