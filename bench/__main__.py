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
from bench.config import MODES

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
        spark = session.start(sizes.driver_memory, sizes.java_options)
        from bench.methods import make_context

        bench = workloads.Bench(spark, make_context(spark, ensemble), sizes, paths, work_dir, log=log)
        for name, run_section in [("JVM warm-up", workloads.warm_jvm)] + [(n, SECTIONS[n]) for n in sections]:
            section_started = time.perf_counter()
            log(f"section {name}")
            try:
                run_section(bench)
            except Exception as error:  # report what ran; say what did not
                first_line = (str(error).splitlines() or [""])[0][:200]
                notes.append(f"Section {name} stopped early: {type(error).__name__}: {first_line}")
                log(notes[-1])
            log(f"section {name} took {time.perf_counter() - section_started:.0f} s")
        described = machine.describe(spark)
        described["parallel speed per core (2 processes vs 1, measured at start)"] = parallel
    finally:
        if spark is not None:
            try:
                spark.stop()
            except Exception:  # a JVM that died mid-run: nothing left to stop
                pass
        shutil.rmtree(work_dir, ignore_errors=True)

    written, plot_note = plots.write_all(args.out, bench.results)
    notes += report.drift_note(bench.results) + report.method_notes(sizes)
    run = {"date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
           "command": "python -m bench" + {"full": "", "quick": " --quick", "smoke": " --smoke"}[sizes.mode],
           "seconds": time.perf_counter() - started, "notes": notes, "load_start": load_start,
           "load_end": f"{machine.load_average()}, CPU pressure {machine.cpu_pressure()}"}
    report.write(os.path.join(args.out, "latest.md"), run=run, machine=described, sizes=sizes,
                 setup=report.setup(sizes, ensemble, bench.diagnostics.get("jvm_warm_up")), results=bench.results,
                 agree=bench.agreement, diagnostics=bench.diagnostics, plots=written, plot_note=plot_note)
    with open(os.path.join(args.out, "latest.json"), "w") as f:
        json.dump({"run": run, "sizes": asdict(sizes), "results": [asdict(r) for r in bench.results],
                   "agreement": bench.agreement, "diagnostics": bench.diagnostics}, f, indent=1)
    log(f"wrote {os.path.join(args.out, 'latest.md')} and {len(written)} plots")
    return 0


if __name__ == "__main__":
    sys.exit(main())
