"""python -m bench [--quick | --smoke] [--out DIR] [--only A,B,C,batch,scaling]"""
import argparse
import datetime
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict

from bench import data, machine, models, plots, report, session, sweeps, workloads
from bench.config import CORES, GRID_LEVELS, MODES, WEIGHTS

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
SECTIONS = {"A": workloads.workload_a, "B": workloads.workload_b, "C": workloads.workload_c,
            "batch": sweeps.batch_size, "scaling": sweeps.scaling}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="shrunk row counts, same model (about two minutes)")
    size.add_argument("--smoke", action="store_true", help="tiny everything, to check the suite runs")
    parser.add_argument("--out", default=RESULTS_DIR, help=f"where latest.md and the plots go (default {RESULTS_DIR})")
    parser.add_argument("--only", default=",".join(SECTIONS), help="comma-separated subset of " + ",".join(SECTIONS))
    return parser


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    sizes = MODES["smoke" if args.smoke else "quick" if args.quick else "full"]
    sections = [s for s in args.only.split(",") if s]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        raise SystemExit(f"unknown sections: {', '.join(sorted(unknown))}")
    os.makedirs(args.out, exist_ok=True)
    started = time.perf_counter()
    load_start = f"{machine.load_average()}, CPU pressure {machine.cpu_pressure()}"
    parallel = machine.parallel_speed()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f}s] {message}", flush=True)

    log(f"mode {sizes.mode}: sections {', '.join(sections)}")
    ensemble = models.load_or_train(sizes, log=log)
    work_dir = tempfile.mkdtemp(prefix="treescore-bench-")
    notes = []
    spark = None
    try:
        log(f"writing {sizes.total_rows:,} rows x {sizes.features} features to {work_dir}")
        paths = data.write_dataset(os.path.join(work_dir, "data"), sizes.total_rows, sizes.chunk_rows, sizes.features)
        spark = session.start(sizes.driver_memory)
        from bench.methods import make_context

        bench = workloads.Bench(spark, make_context(spark, ensemble), sizes, paths, work_dir, log=log)
        for name in sections:
            section_started = time.perf_counter()
            log(f"section {name}")
            try:
                SECTIONS[name](bench)
            except Exception as error:  # report what ran; say what did not
                notes.append(f"Section {name} stopped early: {type(error).__name__}: {str(error).splitlines()[0][:200]}")
                log(notes[-1])
            log(f"section {name} took {time.perf_counter() - section_started:.0f} s")
        described = machine.describe(spark)
        described["parallel speed per core (2 processes vs 1, measured at start)"] = parallel
    finally:
        if spark is not None:
            spark.stop()
        shutil.rmtree(work_dir, ignore_errors=True)

    written, plot_note = plots.write_all(args.out, bench.results)
    notes += _notes(sizes)
    run = {"date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
           "command": "python -m bench" + {"full": "", "quick": " --quick", "smoke": " --smoke"}[sizes.mode],
           "seconds": time.perf_counter() - started, "notes": notes, "load_start": load_start,
           "load_end": f"{machine.load_average()}, CPU pressure {machine.cpu_pressure()}"}
    report.write(os.path.join(args.out, "latest.md"), run=run, machine=described, sizes=sizes,
                 setup=_setup(sizes, ensemble), results=bench.results, agree=bench.agreement,
                 diagnostics=bench.diagnostics, plots=written, plot_note=plot_note)
    with open(os.path.join(args.out, "latest.json"), "w") as f:
        json.dump({"run": run, "sizes": asdict(sizes), "results": [asdict(r) for r in bench.results],
                   "agreement": bench.agreement, "diagnostics": bench.diagnostics}, f, indent=1)
    log(f"wrote {os.path.join(args.out, 'latest.md')} and {len(written)} plots")
    return 0


def _setup(sizes, ensemble) -> dict:
    return {
        "model": f"ensemble of 3 LightGBM regressors, {sizes.trees} trees each, {sizes.leaves} leaves max "
                 f"(mean {ensemble.mean_leaves():.1f} per tree), {sizes.features} float64 features, trained on "
                 f"{sizes.train_rows:,} rows; score = {' + '.join(f'{w}*m{i + 1}' for i, w in enumerate(WEIGHTS))}",
        "data": f"synthetic normal features, 1% NaN; Parquet files of {sizes.chunk_rows:,} rows, one partition per file",
        "rows": f"A and B {sizes.rows_a:,}; C {sizes.rows_c:,} x {GRID_LEVELS} levels; "
                f"batch sweep {sizes.rows_a:,} in {CORES} partitions; scaling {', '.join(f'{r:,}' for r in sizes.scaling_rows)}",
        "Spark": f"local[{CORES}], driver memory {sizes.driver_memory}, default Arrow batch 10,000 rows, "
                 "default treescore batch 8,192 rows and 1 native thread",
        "timing": (f"median of {sizes.runs} timed runs after one warm-up run (sweeps: one warm-up per method, "
                   "at the first point)") if sizes.warm_up else f"{sizes.runs} timed run(s), no warm-up",
    }


def _notes(sizes) -> list:
    notes = [
        "Peak RSS: summed over the Spark JVM and every descendant process (PySpark daemon, Python workers), "
        "read from /proc every 50 ms during the timed runs; the limit's is this driver process's own RSS (it holds "
        "the feature matrix). 'RSS before' is the same sum just before the timed runs. Shared pages of forked "
        "workers count once per process.",
        "A full JVM GC runs before each Spark method so that G1 can return heap; methods run in the order treescore "
        "batched, treescore rule off, mapInPandas, mapInArrow, pandas UDFs, Python UDF, so treescore's peaks never "
        "include idle Python workers, while every later method's do (workers are reused, as by default).",
        "All Python methods predict with num_threads=1 (Spark runs 2 tasks at once); treescore uses its default "
        "1 native thread per task; the limit uses 2 threads in one call.",
        "The rows/s of a sampled method is measured on its sample only.",
    ]
    if sizes.runs < 3:
        notes.append(f"{sizes.runs} timed run per measurement in {sizes.mode} mode: a plumbing check, not a measurement.")
    if sizes.mode != "full":
        notes.append(f"{sizes.mode} mode: row counts are far below the full run's, so fixed costs (job start, "
                     "per-partition model loads, Python worker start) weigh more; use the full run for conclusions.")
    return notes


if __name__ == "__main__":
    sys.exit(main())
