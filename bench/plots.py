"""PNG plots of the results (matplotlib, Agg backend). Without matplotlib: no plots, and a note saying so."""
import os
from typing import List, Tuple

from bench.config import GRID_LEVELS
from bench.report import NAMES, ORDER
from bench.timing import Result

TITLES = {"A": "A: cached DataFrame, noop write", "B": "B: Parquet in, score, Parquet out",
          "C": f"C: what-if grid, {GRID_LEVELS} levels per row"}

COLORS = {"treescore_batched": "tab:green", "treescore_batched_exploded": "tab:olive", "limit": "black", "limit_engine": "dimgray",
          "map_in_pandas": "tab:blue", "map_in_arrow": "tab:cyan", "treescore_fallback": "tab:gray"}


def write_all(out_dir: str, results: List[Result]) -> Tuple[List[str], str]:
    """Returns (file names written, a note for the report)."""
    try:
        import matplotlib
    except ImportError:
        return [], "Plots skipped: matplotlib is not installed in this Python."
    matplotlib.use("Agg")
    written = [_workloads(out_dir, results), _batch_size(out_dir, results), _scaling(out_dir, results)]
    return [w for w in written if w], ""


def _workloads(out_dir: str, results: List[Result]) -> str:
    """Rows/s and peak memory of every method in A, B and C on linear axes, each bar labelled
    with its figure and its ratio to treescore batched, so that a 1.15x reads as 1.15x."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(19, 9), constrained_layout=True)
    for col, workload in enumerate(("A", "B", "C")):
        rows = [r for m in ORDER for r in results if r.workload == workload and r.method == m and r.param is None]
        labels = [NAMES[r.method] for r in rows]
        colors = [COLORS.get(r.method, "tab:orange") for r in rows]
        speed, memory = axes[0][col], axes[1][col]
        if not rows:  # a full run done in parts may not have reached this workload yet
            speed.set_title(TITLES[workload], fontsize=10)
            for ax in (speed, memory):
                ax.set_axis_off()
                ax.text(0.5, 0.5, "not measured in this run", ha="center", va="center", transform=ax.transAxes)
            continue
        reference = next((r for r in rows if r.method == "treescore_batched" and r.ok), None)
        rates = [r.rows_per_second if r.ok else 0 for r in rows]
        speed.barh(labels, rates, color=colors)
        # Memory split at the peak: the JVM (or, for the limit, its own process), then Python workers.
        own = [r.peak_root_bytes / 2**20 if r.ok else 0 for r in rows]
        workers = [(r.peak_bytes - r.peak_root_bytes) / 2**20 if r.ok else 0 for r in rows]
        memory.barh(labels, own, color=colors)
        memory.barh(labels, workers, left=own, color=colors, alpha=0.4, hatch="//", edgecolor="white")
        top = max(rates) or 1.0
        for i, r in enumerate(rows):
            if not r.ok:
                for ax in (speed, memory):
                    ax.text(0.01, i, r.status.split(":")[0].split(" (")[0], transform=ax.get_yaxis_transform(),
                            va="center", fontsize=8, color="red")
                continue
            ratio = f" ({r.rows_per_second / reference.rows_per_second:.2f}x)" if reference else ""
            speed.text(r.rows_per_second + top * 0.01, i, f"{r.rows_per_second:,.0f}{ratio}", va="center", fontsize=8)
            memory.text(r.peak_bytes / 2**20, i, f" {r.peak_bytes / 2**20:,.0f}", va="center", fontsize=8)
        speed.set_xlim(0, top * 1.35)  # room for the labels
        memory.set_xlim(0, max(r.peak_bytes for r in rows) / 2**20 * 1.2 or 1)
        speed.set_title(TITLES[workload], fontsize=10)
        speed.set_xlabel("input rows/s (median), and the ratio to treescore batched")
        memory.set_xlabel("peak RSS, MiB: JVM (solid) + Python workers (hatched)")
        for ax in (speed, memory):
            ax.invert_yaxis()
            ax.tick_params(axis="y", labelsize=8)
            ax.tick_params(axis="x", labelsize=8)
            ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:,.0f}"))
            ax.locator_params(axis="x", nbins=5)
            ax.grid(axis="x", alpha=0.3)
    return _save(fig, out_dir, "workloads.png")


def _series(results: List[Result], workload: str):
    by_method = {}
    for r in results:
        if r.workload == workload and r.ok:
            by_method.setdefault(r.method, []).append(r)
    return by_method


def _batch_size(out_dir: str, results: List[Result]) -> str:
    import matplotlib.pyplot as plt

    series = _series(results, "batch")
    if not series:
        return ""
    fig, (speed, memory) = plt.subplots(1, 2, figsize=(13, 4.8), constrained_layout=True)
    for method, points in series.items():
        x = [p.param for p in points]
        style = dict(marker="o", label=NAMES[method], color=COLORS.get(method))
        speed.plot(x, [p.rows_per_second for p in points], **style)
        memory.plot(x, [p.peak_bytes / 2**20 for p in points], **style)
    sizes = sorted({p.param for points in series.values() for p in points})
    for ax, label in ((speed, "rows/s (median)"), (memory, "peak RSS, MiB (JVM + Python workers)")):
        ax.set_xscale("log", base=2)
        _label_ticks(ax, sizes)
        ax.set_xlabel("rows per batch")
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax.grid(alpha=0.3)
        ax.legend()
    speed.set_title("Throughput vs batch size")
    memory.set_title("Peak memory vs batch size")
    return _save(fig, out_dir, "batch_size.png")


def _scaling(out_dir: str, results: List[Result]) -> str:
    import matplotlib.pyplot as plt

    series = _series(results, "scaling")
    if not series:
        return ""
    fig, ax = plt.subplots(figsize=(7, 4.5), constrained_layout=True)
    for method, points in series.items():
        ax.plot([p.param for p in points], [1e9 / p.rows_per_second for p in points], marker="o",
                label=NAMES[method], color=COLORS.get(method))
    ax.set_xscale("log")
    _label_ticks(ax, sorted({p.param for points in series.values() for p in points}))
    ax.set_xlabel("rows per job")
    ax.set_ylabel("ns per row (median)")
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_title("Cost per row vs job size (flat is good)")
    ax.grid(alpha=0.3)
    ax.legend()
    return _save(fig, out_dir, "scaling.png")


def _label_ticks(ax, values) -> None:
    """Ticks at the measured points, labelled 512, 8k, 1M rather than powers of two."""
    def short(v):
        for unit, size in (("M", 2**20 if v % 1000 else 10**6), ("k", 2**10 if v % 1000 else 10**3)):
            if v >= size:
                return f"{v / size:g}{unit}"
        return str(v)

    ax.set_xticks(values)
    ax.set_xticklabels([short(v) for v in values])
    ax.minorticks_off()


def _save(fig, out_dir: str, name: str) -> str:
    import matplotlib.pyplot as plt

    fig.savefig(os.path.join(out_dir, name), dpi=110)
    plt.close(fig)
    return name
