"""python -m bench [--quick | --smoke] [--out DIR] [--only A,B,C,batch,scaling,engines,shap,shapes,synapseml,cascade,topk]
[--merge] [--render]"""
import argparse
import datetime
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from typing import List

from bench import (cascade, data, engines, machine, merge, models, plots, report, session, shap, shapes, sweeps,
                   synapse, topk, workloads)
from bench.config import MODES
from bench.timing import Result

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
SECTIONS = {"A": workloads.workload_a, "B": workloads.workload_b, "C": workloads.workload_c,
            "batch": sweeps.batch_size, "scaling": sweeps.scaling, "engines": engines.native_engines,
            "shap": shap.contributions, "shapes": shapes.model_shapes, "synapseml": synapse.synapseml, "cascade": cascade.automatic_cascade,
            "topk": topk.top_k}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="fewer rows, same model, the full run's ratios (A: 200,000 rows, under 4 minutes)")
    size.add_argument("--smoke", action="store_true", help="tiny everything, to check the suite runs")
    parser.add_argument("--out", default=RESULTS_DIR, help=f"where latest.md and the plots go (default {RESULTS_DIR})")
    parser.add_argument("--only", default=",".join(SECTIONS), help="comma-separated subset of " + ",".join(SECTIONS))
    parser.add_argument("--merge", action="store_true",
                        help="keep the other sections' results from the latest.json in --out (same mode): "
                             "a full run in parts")
    parser.add_argument("--render", action="store_true",
                        help="measure nothing: rewrite latest.md and the plots from the latest.json in --out")
    return parser


def _now() -> str:
    return datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")


def _commit() -> str:
    """The commit the measured code is at, with "+ changes" when tracked files differ from it."""
    import subprocess

    def git(*args):
        return subprocess.run(["git", *args], cwd=os.path.dirname(RESULTS_DIR), capture_output=True, text=True).stdout.strip()

    head = git("rev-parse", "HEAD") or "unknown"
    return head + (" + changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def _load() -> str:
    return f"{machine.load_average()}, CPU pressure {machine.cpu_pressure()}"


def _publish(out: str, saved: dict) -> List[str]:
    """Writes latest.json, latest.md and the plots from one run's (or merged parts') saved results."""
    results = [Result(**r) for r in saved["results"]]
    written, plot_note = plots.write_all(out, results)
    report.write(os.path.join(out, "latest.md"), run=saved["run"], machine=saved["machine"],
                 sizes=MODES[saved["sizes"]["mode"]], setup=saved["setup"], parts=saved["sections"],
                 results=results, agree=saved["agreement"], diagnostics=saved["diagnostics"], plots=written,
                 plot_note=plot_note)
    with open(os.path.join(out, "latest.json"), "w") as f:
        json.dump(saved, f, indent=1)
    return written


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.render:
        with open(os.path.join(args.out, "latest.json")) as f:
            written = _publish(args.out, json.load(f))
        print(f"wrote {os.path.join(args.out, 'latest.md')} and {len(written)} plots from latest.json")
        return 0
    sizes = MODES["smoke" if args.smoke else "quick" if args.quick else "full"]
    sections = [s for s in args.only.split(",") if s]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        raise SystemExit(f"unknown sections: {', '.join(sorted(unknown))}")
    os.makedirs(args.out, exist_ok=True)
    previous = merge.load(args.out, sizes.mode, sections) if args.merge else merge.Previous()
    command = " ".join(["python -m bench"] + (argv if argv is not None else sys.argv[1:]))
    measured_at = _commit()  # before anything runs: the code that measures
    started = time.perf_counter()
    parallel = machine.parallel_speed()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f}s] {message}", flush=True)

    log(f"mode {sizes.mode}: sections {', '.join(sections)}")
    ensemble = models.load_or_train(sizes, log=log)
    work_dir = tempfile.mkdtemp(prefix="treescore-bench-")
    spark, parts = None, {}
    try:
        rows = sizes.rows_needed(sections)
        log(f"writing {rows:,} rows x {sizes.features} features to {work_dir}")
        paths = data.write_dataset(os.path.join(work_dir, "data"), rows, sizes.chunk_rows, sizes.features)
        spark = session.start(sizes.driver_memory, sizes.java_options)
        from bench.methods import make_context

        bench = workloads.Bench(spark, make_context(spark, ensemble), sizes, paths, work_dir, log=log)
        for name, run_section in [("JVM warm-up", workloads.warm_jvm)] + [(n, SECTIONS[n]) for n in sections]:
            parts[name] = _run_section(name, run_section, bench, log)
        described = machine.describe(spark)
    finally:
        if spark is not None:
            try:
                spark.stop()
            except Exception:  # a JVM that died mid-run: nothing left to stop
                pass
        shutil.rmtree(work_dir, ignore_errors=True)

    # Every section of this part shares its JVM warm-up, the parallel speed and the command.
    warm_up = parts.pop("JVM warm-up")
    for info in parts.values():
        info.update(command=command, parallel=parallel, jvm_warm_up=bench.diagnostics.get("jvm_warm_up"),
                    notes=warm_up["notes"] + info["notes"])
    diagnostics = {k: v for k, v in bench.diagnostics.items() if k != "jvm_warm_up"}
    results, agreement, diagnostics, parts, notes = merge.combine(
        previous, bench.results, bench.agreement, diagnostics, parts, described)
    notes += list(dict.fromkeys(n for info in parts.values() for n in info["notes"]))  # warm-up notes once
    notes += report.drift_note(results) + report.method_notes(sizes)
    run = {"date": _now(), "command": command, "seconds": time.perf_counter() - started, "notes": notes,
           "commit": measured_at}
    written = _publish(args.out, {"run": run, "sizes": asdict(sizes), "machine": described,
                                  "setup": report.setup(sizes, ensemble), "sections": parts,
                                  "results": [asdict(r) for r in results], "agreement": agreement,
                                  "diagnostics": diagnostics})
    log(f"wrote {os.path.join(args.out, 'latest.md')} and {len(written)} plots")
    return 0


def _run_section(name: str, run_section, bench, log) -> dict:
    """Runs one section; a failure is reported in the section's notes, and the run goes on."""
    started, load_before, notes = time.perf_counter(), _load(), []
    log(f"section {name}")
    try:
        run_section(bench)
    except Exception as error:  # report what ran; say what did not
        first_line = (str(error).splitlines() or [""])[0][:200]
        notes.append(f"Section {name} stopped early: {type(error).__name__}: {first_line}")
        log(notes[-1])
    seconds = time.perf_counter() - started
    log(f"section {name} took {seconds:.0f} s")
    return {"date": _now(), "seconds": seconds, "load_start": load_before, "load_end": _load(), "notes": notes}


if __name__ == "__main__":
    sys.exit(main())
