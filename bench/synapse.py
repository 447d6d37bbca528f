"""Section "synapseml": SynapseML 1.1.3, treescore and mapInPandas in one Spark 3.5 session.

SynapseML 1.1.3 exists only for Scala 2.12 / Spark 3.5, and the bench's own session runs the
newest Spark line, so this section runs a child process (`python -m bench.synapse`) in the
Spark 3.5 venv of bench/spark35.py. The child starts ONE local[2] session like
bench/session.py's, with SynapseML's jars resolved from Maven Central and treescore's 3.5 jar
(treescore.configure), and in it measures, on the same Parquet files and the same ensemble:

- A35: workload A (a cached DataFrame, noop write) and B35: workload B (Parquet in, score,
  Parquet out), each with SynapseML (VectorAssembler(handleInvalid="keep"), then one
  LightGBMRegressionModel.loadNativeModelFromString per member and the weighted sum of the
  three predictions, in the members' order: the sum treescore and mapInPandas compute),
  treescore batched and mapInPandas;
- SHAP35: SHAP values of member 0 on a small sample, SynapseML's featuresShapCol against
  treescore's score(kind="contrib").

Each method's first outputs are compared with LightGBM's Booster.predict (bench.agreement
"A35" and "SHAP35": max |diff| and the share of bit-identical outputs). The child writes its
results to a JSON file after every measurement, so a child that dies (a JVM crash) still
hands back what it measured; what it did not is recorded as a failed Result saying why.

Both SynapseML (lightgbmlib 3.3.510, soname lib_lightgbm.so) and treescore (LightGBM 4.7.0)
bring LightGBM into the one JVM. treescore's is linked into its own library with no symbol
exported (build/fetch_lightgbm.py), so each JNI library runs its own LightGBM whichever loads
first; the child loads SynapseML's first (spec "native_first"), the order in which a shared
library would have handed treescore SynapseML's LightGBM, and records the LightGBM
libraries the JVM has mapped after each first use (diagnostics["synapseml"]["native_libraries"]).
SynapseML extracts and loads its two libraries again for every model in every task: the copies
are counted there too.
"""
import argparse
import functools
import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import deque
from dataclasses import asdict
from typing import Dict, List

import numpy as np

from bench import spark35
from bench.timing import Result

PACKAGE = f"com.microsoft.azure:synapseml-lightgbm_2.12:{spark35.SYNAPSEML_VERSION}"
MAVEN_CENTRAL = "https://repo1.maven.org/maven2/"
IVY_DIR = os.path.join(spark35.CACHE_DIR, "ivy-spark-3.5")  # resolved jars, reused by later runs
WORKLOADS = ("A35", "B35")
METHOD_KEYS = ("synapseml", "treescore_batched", "map_in_pandas")  # run order in each workload
SHAP_METHODS = ("synapseml", "treescore")
SHAP_MEMBER = 0
# SHAP of 300 trees x 200 features: SynapseML (LightGBM's TreeSHAP) takes about a second per 1,000
# rows per core; treescore's engine explains ten times the rows, so that its runs too last seconds.
SHAP_ROWS = {"synapseml": 2_000, "treescore": 20_000}
AGREE_ROWS = 256
TIMEOUT_SECONDS = {"smoke": 1200, "quick": 1800, "full": 5 * 3600}  # the whole child, resolution included


# ---------------------------------------------------------------------------------------------
# Parent side: runs in the bench's own Python and session.


def _expected(sizes) -> Dict[str, int]:
    return {"A35": sizes.rows_a, "B35": sizes.rows_b, "SHAP35": min(SHAP_ROWS["synapseml"], sizes.rows_a)}


def _missing(results: List[Result], sizes, reason: str) -> List[Result]:
    """Failed Results for every (workload, method) the child did not hand back."""
    have = {(r.workload, r.method) for r in results}
    rows = _expected(sizes)
    wanted = [(w, m) for w in WORKLOADS for m in METHOD_KEYS] + [("SHAP35", m) for m in SHAP_METHODS]
    return [Result(w, m, rows[w], status=reason if reason.startswith("failed") else f"failed: {reason}")
            for w, m in wanted if (w, m) not in have]


def _child_env() -> Dict[str, str]:
    """This process's environment without what ties PySpark to this (4.x) install."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPARK_HOME", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYSPARK_SUBMIT_ARGS")
           and not k.startswith("PYSPARK_GATEWAY")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in [spark35.REPO_ROOT, os.environ.get("PYTHONPATH")] if p)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return env


def _crash_summary(folder: str):
    """(one line, the log's head) of a JVM crash log (hs_err) the child's JVM left; ("", []) if none."""
    for path in glob.glob(os.path.join(folder, "hs_err_pid*.log")):
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
        header = [line for line in lines[:40] if line.startswith("#")]
        cause = next((line for line in header if line.startswith("#  SIG") or "Internal Error" in line), "")
        after = header.index("# Problematic frame:") + 1 if "# Problematic frame:" in header else None
        frame = header[after] if after is not None and after < len(header) else ""
        return f"JVM crashed ({cause.strip('# ')}; {frame.strip('# ')})"[:300], header
    return "", []


def synapseml(bench) -> None:
    """The section: makes the Spark 3.5 venv if needed, runs the child, adopts its results.
    Whatever fails, every (workload, method) of the section ends up as a Result, failed ones
    saying why; nothing is raised to the bench."""
    before = len(bench.results)
    try:
        _section(bench)
    except Exception as error:
        reason = f"failed: {_first_line(error)}"
        bench.log(f"synapseml section: {reason}")
        bench.log(traceback.format_exc(limit=3))
        bench.results.extend(_missing(bench.results[before:], bench.sizes, reason))
        bench.diagnostics.setdefault("synapseml", {})["error"] = reason


def _section(bench) -> None:
    from bench import session

    sizes, log = bench.sizes, bench.log
    try:
        python, stamp = spark35.ensure(log=log)
    except Exception as error:
        reason = f"failed: Spark 3.5 venv: {type(error).__name__}: {error}"[:300]
        log(reason)
        bench.results.extend(_missing([], sizes, reason))
        bench.diagnostics["synapseml"] = {"error": reason}
        return
    session.collect_jvm_garbage(bench.spark)  # this session idles meanwhile: let it give its heap back
    folder = tempfile.mkdtemp(prefix="synapseml-", dir=bench.work_dir)
    spec_path, out_path = os.path.join(folder, "spec.json"), os.path.join(folder, "out.json")
    with open(spec_path, "w") as f:
        json.dump({"sizes": asdict(sizes), "paths": list(bench.paths), "texts": list(bench.ctx.ensemble.texts),
                   "weights": list(bench.ctx.ensemble.weights), "work_dir": folder,
                   "native_first": "synapseml"}, f)
    command = [python, "-m", "bench.synapse", "--spec", spec_path, "--out", out_path]
    timeout = TIMEOUT_SECONDS.get(sizes.mode, TIMEOUT_SECONDS["full"])
    stderr_path = os.path.join(folder, "child.stderr")
    started = time.perf_counter()
    with open(stderr_path, "w") as stderr:
        child = subprocess.Popen(command, cwd=folder, env=_child_env(), stdout=subprocess.PIPE, stderr=stderr,
                                 text=True, start_new_session=True)  # its own group: a time-out ends its JVM too
        reader = threading.Thread(target=lambda: [log(f"  [3.5] {line.rstrip()}") for line in child.stdout],
                                  daemon=True)
        reader.start()
        try:
            code = child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGTERM)
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
            code = None
        reader.join(timeout=10)
    try:
        with open(out_path) as f:
            out = json.load(f)
    except (OSError, ValueError):
        out = {}
    results = [Result(**r) for r in out.get("results", [])]
    crash, crash_log = _crash_summary(folder)
    if code is None:
        reason = f"failed: the Spark 3.5 child ran past its {timeout} s time-out"
    elif crash:
        reason = f"failed: {crash}"
    elif out.get("error"):
        reason = f"failed: {out['error']}"
    elif code != 0:
        with open(stderr_path, errors="replace") as f:
            tail = [line.strip() for line in deque(f, maxlen=200) if line.strip()]
        errors = [line for line in tail if "Exception" in line or "Error" in line]
        last = (errors or tail or [""])[-1]
        reason = f"failed: the Spark 3.5 child exited with {code}: {last[:200]}"
    else:
        reason = "failed: the Spark 3.5 child did not report this"
    results += _missing(results, sizes, reason)
    bench.results.extend(results)
    for workload, found in out.get("agreement", {}).items():
        bench.agreement[workload] = found
    diagnostics = out.get("diagnostics", {})
    diagnostics.update(child_seconds=time.perf_counter() - started, child_exit=code, venv=stamp)
    if crash_log:
        diagnostics["jvm_crash_log_head"] = crash_log
    failed = {f"{r.workload} {r.method}": r.status for r in results if not r.ok}
    if failed:
        diagnostics["failed"] = failed
    bench.diagnostics["synapseml"] = diagnostics
    log(f"Spark 3.5 child finished (exit {code}) in {time.perf_counter() - started:.0f} s")


# ---------------------------------------------------------------------------------------------
# Child side: runs in the Spark 3.5 venv.


class Output:
    """What the child hands back, rewritten (atomically) after every step."""

    def __init__(self, path: str):
        self.path = path
        self.data = {"results": [], "agreement": {}, "diagnostics": {}}

    def save(self) -> None:
        with open(self.path + ".tmp", "w") as f:
            json.dump(self.data, f, indent=1)
        os.replace(self.path + ".tmp", self.path)


def _ivy_settings() -> str:
    """An Ivy settings file that resolves from Maven Central alone.

    Spark's default chain looks in ~/.m2 first, and a local Maven repository that holds a pom
    without its jar (as sbt and Maven leave for pom-only lookups) fails the whole resolution
    ("download failed: ...httpcore;4.4.13!httpcore.jar").
    """
    os.makedirs(IVY_DIR, exist_ok=True)
    path = os.path.join(IVY_DIR, "ivysettings.xml")
    text = ("<ivysettings>\n  <settings defaultResolver=\"central\"/>\n  <resolvers>\n"
            f"    <ibiblio name=\"central\" m2compatible=\"true\" root=\"{MAVEN_CENTRAL}\"/>\n"
            "  </resolvers>\n</ivysettings>\n")
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
    return path


def _start_session(sizes, work_dir: str, log, with_synapseml: bool = True):
    from bench import session

    # Temporary files (SynapseML's native library copies among them) go to the section's folder,
    # which the bench deletes, even after a JVM crash; so does a crash log.
    tmp = os.path.join(work_dir, "tmp")
    os.makedirs(tmp, exist_ok=True)
    options = (f"{sizes.java_options} -Djava.io.tmpdir={tmp} "
               f"-XX:ErrorFile={os.path.join(work_dir, 'hs_err_pid%p.log')}").strip()
    extra = {"spark.jars.packages": PACKAGE, "spark.jars.ivy": IVY_DIR,
             "spark.jars.ivySettings": _ivy_settings()} if with_synapseml else {}
    return session.start(sizes.driver_memory, options, extra=extra)


def _with_stderr_to(path: str, start):
    """Runs start() with file descriptor 2 sent to `path`, so the JVM it launches writes its stderr
    (Ivy's resolution report, Spark's log) there for good; this process's stderr is restored."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(path, "ab") as f:
            os.dup2(f.fileno(), 2)
        return start()
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _launch_failure(path: str) -> str:
    """Why a JVM that exited at launch did: the exception spark-submit ended with (for a refused
    Maven resolution, "[unresolved dependency: ...]" or "[download failed: ...]")."""
    try:
        with open(path, errors="replace") as f:
            lines = [line.strip() for line in f]
    except OSError:
        return ""
    found = [line.split('"', 2)[-1].strip() for line in lines if line.startswith("Exception in thread")]
    return found[-1][:250] if found else ""


def synapse_models(texts):
    from synapse.ml.lightgbm import LightGBMRegressionModel

    return [LightGBMRegressionModel.loadNativeModelFromString(text).setFeaturesCol("features")
            .setPredictionCol(f"p{i}") for i, text in enumerate(texts)]


def assembled(frame, names):
    from pyspark.ml.feature import VectorAssembler

    return VectorAssembler(inputCols=list(names), outputCol="features", handleInvalid="keep").transform(frame)


def synapse_scored(frame, models, weights, names, keep=("id",)):
    """VectorAssembler, each member's transform, then sum(weight_i * p_i) in the members' order."""
    from pyspark.sql import functions as F

    scored = assembled(frame, names)
    for model in models:
        scored = model.transform(scored)
    terms = [F.lit(float(w)) * F.col(f"p{i}") for i, w in enumerate(weights)]
    return scored.select(*keep, functools.reduce(lambda total, term: total + term, terms).alias("prediction"))


def synapse_shap(frame, model, names, keep=("id",)):
    scored = model.copy().setFeaturesShapCol("shap").transform(assembled(frame, names))
    return scored.select(*keep, "shap")


def treescore_shap(frame, model, keep=("id",)):
    from treescore import score

    return frame.select(*keep, score(model, kind="contrib").alias("shap"))


def _compare(got: np.ndarray, expected: np.ndarray) -> dict:
    got, expected = np.ascontiguousarray(got, dtype=np.float64), np.ascontiguousarray(expected, dtype=np.float64)
    if got.shape != expected.shape:
        return {"error": f"shape {got.shape}, expected {expected.shape}"}
    return {"max_abs_diff": float(np.max(np.abs(got - expected))) if got.size else 0.0,
            "identical_share": float(np.mean(got.view(np.uint64) == expected.view(np.uint64))) if got.size else 1.0,
            "values": int(got.size), "rows": int(got.shape[0])}


def _collect(frame, column: str) -> np.ndarray:
    """The column of a small frame, in id order, as float64 (vectors and arrays as rows of a matrix)."""
    from pyspark.ml.functions import vector_to_array
    from pyspark.sql import functions as F

    types = dict(frame.dtypes)
    if types[column] == "vector":
        frame = frame.withColumn(column, vector_to_array(F.col(column)))
    rows = frame.orderBy("id").select(column).collect()
    return np.array([r[0] for r in rows], dtype=np.float64)


HEADER = re.compile(r"^[0-9a-f]+-[0-9a-f]+ ")


def _lightgbm_mappings(pid: int) -> Dict[str, object]:
    """The LightGBM libraries the JVM has mapped, from /proc/PID/smaps: treescore's files (by path;
    it deletes them once loaded), and how many copies of SynapseML's lib_lightgbm.so and
    lib_lightgbm_swig.so (it extracts and loads both again for every model in every task) with
    their resident MiB."""
    files: Dict[str, int] = {}
    current = None
    try:
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                if HEADER.match(line):  # a mapping's first line: address range, ..., then the file if any
                    parts = line.split(None, 5)
                    name = parts[5].strip() if len(parts) == 6 else ""
                    current = name if "lightgbm" in name or "treescore_jni" in name else None
                    if current:
                        files.setdefault(current, 0)
                elif current and line.startswith("Rss:"):
                    files[current] += int(line.split()[1])
    except OSError:
        return {"error": f"/proc/{pid}/smaps unreadable"}
    summary: Dict[str, object] = {"treescore": sorted(p for p in files if "treescore-native" in p)}
    for name in ("lib_lightgbm.so", "lib_lightgbm_swig.so"):
        copies = [p for p in files if "mml-natives" in p and os.path.basename(p.split(" ")[0]) == name]
        summary[f"synapseml {name} copies"] = len(copies)
        summary[f"synapseml {name} resident MiB"] = round(sum(files[p] for p in copies) / 1024, 1)
    summary["other"] = sorted(p for p in files if "treescore-native" not in p and "mml-natives" not in p)
    return summary


def _first_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {(str(error).strip().splitlines() or [''])[0][:200]}"


def run(spec: dict, out: Output, log) -> None:
    import lightgbm as lgb
    import pyspark
    import treescore

    from bench import data, models, session, workloads
    from bench.config import Sizes
    from bench.methods import make_context, map_in_pandas, treescore_scored

    sizes = Sizes(**{k: tuple(v) if isinstance(v, list) else v for k, v in spec["sizes"].items()})
    names = data.feature_names(sizes.features)
    texts, weights = tuple(spec["texts"]), tuple(spec["weights"])
    diagnostics = out.data["diagnostics"]
    diagnostics.update(pyspark=pyspark.__version__, lightgbm_python=lgb.__version__, synapseml_package=PACKAGE,
                       native_first=spec.get("native_first", "synapseml"))

    started, synapse_error = time.perf_counter(), None
    jvm_stderr = os.path.join(spec["work_dir"], "jvm.stderr")
    try:
        spark = _with_stderr_to(jvm_stderr, lambda: _start_session(sizes, spec["work_dir"], log))
    except Exception as error:  # resolution refused or a jar that breaks the session: go on without SynapseML
        synapse_error = f"session with {PACKAGE}: {_launch_failure(jvm_stderr) or _first_line(error)}"
        log(f"could not start the session with SynapseML ({synapse_error}); measuring without it")
        spark = _with_stderr_to(jvm_stderr, lambda: _start_session(sizes, spec["work_dir"], log,
                                                                    with_synapseml=False))
    diagnostics["session_start_seconds"] = time.perf_counter() - started  # with Maven resolution
    diagnostics["spark"] = spark.version
    conf = spark.sparkContext._jsc.sc().getConf()
    # The driver's jars: treescore's and, with --packages, every resolved one (spark.jars has only the former).
    jars = conf.get("spark.repl.local.jars", conf.get("spark.jars", ""))
    diagnostics["jars"] = sorted(os.path.basename(j) for j in jars.split(",") if j)
    log(f"Spark {spark.version} session in {diagnostics['session_start_seconds']:.0f} s, "
        f"{len(diagnostics['jars'])} jars")
    pid = session.jvm_pid(spark)

    def load_synapse():
        nonlocal synapse_error
        if synapse_error:
            return None
        try:
            started = time.perf_counter()
            loaded = synapse_models(texts)
            diagnostics["synapseml_model_load_seconds"] = time.perf_counter() - started
            return loaded
        except Exception as error:  # e.g. its native library does not load
            synapse_error = f"loading the models: {_first_line(error)}"
            log(f"SynapseML: {synapse_error}")
            return None

    boosters = [lgb.Booster(model_str=t) for t in texts]
    ensemble = models.Ensemble(texts, weights, names, boosters, [])
    ctx = make_context(spark, ensemble)
    bench = workloads.Bench(spark, ctx, sizes, spec["paths"], spec["work_dir"], log=log)
    tiny = bench.cached(min(AGREE_ROWS, sizes.rows_a))
    mapped = diagnostics["native_libraries"] = {"after treescore's model parse": _lightgbm_mappings(pid)}
    synapse = None

    def first_synapse():
        nonlocal synapse, synapse_error
        synapse = load_synapse()
        mapped["after SynapseML's model load"] = _lightgbm_mappings(pid)
        if synapse is not None:
            try:
                session.noop_write(synapse_scored(tiny, synapse, weights, names))
            except Exception as error:
                synapse_error, synapse = f"first transform: {_first_line(error)}", None
                log(f"SynapseML: {synapse_error}")
        mapped["after SynapseML's first transform"] = _lightgbm_mappings(pid)

    def first_treescore():
        session.noop_write(treescore_scored(tiny, ctx))  # treescore's native libraries load here
        mapped["after treescore's first score"] = _lightgbm_mappings(pid)

    # With one soname for both LightGBMs, the one loaded first would serve both JNI libraries;
    # SynapseML's first is the order that would hand treescore another LightGBM.
    for first in ([first_synapse, first_treescore] if diagnostics["native_first"] == "synapseml"
                  else [first_treescore, first_synapse]):
        first()
    diagnostics["synapseml_error"] = synapse_error
    tiny.unpersist()
    out.save()

    builders = {"synapseml": lambda frame: synapse_scored(frame, synapse, weights, names),
                "treescore_batched": lambda frame: treescore_scored(frame, ctx),
                "map_in_pandas": lambda frame: map_in_pandas(frame, ctx)}

    def measured(workload, key, rows, action, warm_up, note=""):
        if key == "synapseml" and synapse is None:
            bench.results.append(Result(workload, key, rows, status=f"failed: SynapseML {synapse_error}"[:400],
                                        note=note))
        else:
            bench.spark_result(workload, key, rows, action, warm_up=warm_up, note=note)
        out.data["results"] = [asdict(r) for r in bench.results]
        out.save()

    # JVM warm-up, as the bench's: the JIT compiles both JVM methods' hot code before anything is timed.
    if sizes.jvm_warm_seconds:
        warm, rounds, begun = bench.warm_frame(), 0, time.perf_counter()
        jvm_methods = [k for k in ("synapseml", "treescore_batched") if k != "synapseml" or synapse is not None]
        while rounds == 0 or time.perf_counter() - begun < sizes.jvm_warm_seconds:
            for key in jvm_methods:
                session.noop_write(builders[key](warm))
            rounds += 1
        diagnostics["jvm_warm_up"] = {"seconds": time.perf_counter() - begun, "rounds": rounds,
                                      "methods": jvm_methods, "rows": warm.count()}
        log(f"JVM warm-up: {rounds} rounds of {', '.join(jvm_methods)} in {time.perf_counter() - begun:.0f} s")

    # A35: cached rows, noop write.
    frame = bench.cached(sizes.rows_a)
    warm = bench.warm_frame() if sizes.warm_rows else None
    for key in METHOD_KEYS:
        build = builders[key]
        measured("A35", key, sizes.rows_a, lambda: session.noop_write(build(frame)),
                 lambda: session.noop_write(build(warm)))
    agree_rows = min(AGREE_ROWS, sizes.rows_a)
    matrix = bench.matrix(agree_rows)
    expected = ensemble.predict(matrix, num_threads=1)
    small = frame.where(frame.id < agree_rows)
    agreement = out.data["agreement"].setdefault("A35", {})
    for key in METHOD_KEYS:
        if key == "synapseml" and synapse is None:
            agreement[key] = {"error": f"SynapseML {synapse_error}"}
            continue
        try:
            agreement[key] = _compare(_collect(builders[key](small), "prediction"), expected)
        except Exception as error:
            agreement[key] = {"error": _first_line(error)}
    if synapse is not None:  # each member alone, before the weighted sum
        try:
            scored = assembled(small, names)
            for model in synapse:
                scored = model.transform(scored)
            diagnostics["synapseml_members"] = [
                _compare(_collect(scored, f"p{i}"), b.predict(matrix, num_threads=1)) for i, b in enumerate(boosters)]
        except Exception as error:
            diagnostics["synapseml_members"] = {"error": _first_line(error)}
    log("A35 agreement: " + "; ".join(f"{k} {v}" for k, v in agreement.items()))
    out.save()
    frame.unpersist()

    # B35: Parquet in, score, Parquet out.
    for key in METHOD_KEYS:
        target = os.path.join(spec["work_dir"], "B35", key)

        def job(rows, build=builders[key], target=target):
            build(bench.read(rows)).write.mode("overwrite").parquet(target)

        warm_rows = min(sizes.rows_b, sizes.warm_rows)
        measured("B35", key, sizes.rows_b, lambda: job(sizes.rows_b), lambda: job(warm_rows))

    # SHAP35: member 0's SHAP values on a sample, each method's rows its own (SHAP_ROWS).
    member = ctx.treescore_models[SHAP_MEMBER]
    note = f"SHAP values of member {SHAP_MEMBER} ({sizes.features} features + expected value), noop write"
    shap_builders = {"synapseml": lambda f: synapse_shap(f, synapse[SHAP_MEMBER], names),
                     "treescore": lambda f: treescore_shap(f, member)}
    samples = {}
    for key in SHAP_METHODS:
        rows = min(SHAP_ROWS[key], sizes.rows_a)
        samples[key] = sample = bench.cached(rows)
        build = shap_builders[key]
        measured("SHAP35", key, rows, lambda: session.noop_write(build(sample)),
                 lambda: session.noop_write(build(sample)), note=note)
    # Where treescore's SHAP tasks spend their time: one more run, its operator's metrics against
    # its tasks' run time; what is neither input, features nor the engine is mostly the output,
    # num_features + 1 doubles per row.
    before = session.stage_totals(spark)
    metrics, _ = session.batch_score_metrics(treescore_shap(samples["treescore"], member))
    time.sleep(1.0)  # the status store hears of finished tasks asynchronously
    after = session.stage_totals(spark)
    task_ns = sum(after[s][0] for s in after if s not in before) * 1e6
    if metrics and task_ns:
        parts = {"input": metrics["inputTime"], "features": metrics["featureWriteTime"],
                 "engine": metrics["nativeTime"], "model load": metrics["modelLoadTime"]}
        parts["output and the rest"] = max(0.0, task_ns - sum(parts.values()))
        diagnostics["shap_task_time"] = {k: v / task_ns for k, v in parts.items()}
    rows = min(SHAP_ROWS["synapseml"], sizes.rows_a)  # both compared on the same first rows
    expected = boosters[SHAP_MEMBER].predict(bench.matrix(rows), pred_contrib=True, num_threads=1)
    agreement = out.data["agreement"].setdefault("SHAP35", {})
    for key in SHAP_METHODS:
        if key == "synapseml" and synapse is None:
            agreement[key] = {"error": f"SynapseML {synapse_error}"}
            continue
        try:
            agreement[key] = _compare(_collect(shap_builders[key](samples["synapseml"]), "shap"), expected)
        except Exception as error:
            agreement[key] = {"error": _first_line(error)}
    log("SHAP35 agreement: " + "; ".join(f"{k} {v}" for k, v in agreement.items()))
    for sample in samples.values():
        sample.unpersist()
    mapped["at the end"] = _lightgbm_mappings(pid)
    diagnostics["treescore"] = treescore.__version__
    out.save()
    spark.stop()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.synapse",
                                     description="the synapseml section's Spark 3.5 child (bench/synapse.py)")
    parser.add_argument("--spec", required=True, help="JSON: sizes, paths, texts, weights, work_dir")
    parser.add_argument("--out", required=True, help="JSON the results are written to, after every step")
    args = parser.parse_args(argv)
    with open(args.spec) as f:
        spec = json.load(f)
    out = Output(args.out)
    started = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f}s] {message}", flush=True)

    try:
        run(spec, out, log)
    except Exception as error:  # what was measured is saved; the parent marks the rest failed with this
        out.data["error"] = _first_line(error)
        out.save()
        log(f"stopped: {out.data['error']}")
        traceback.print_exc(limit=-4, file=sys.stdout)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
