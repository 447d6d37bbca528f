"""treescore's native memory over time and under a real limit.

The soak: a few hundred queries in one session over 14 models, far more than its budget holds,
cycling through every output kind, iteration ranges, ensembles, routes, cascades, grids, top-K and
contributions. treescore's own account, the C allocator's bytes in use and the JVM's resident
memory (its heap committed and touched from the start) must be as flat at the end as after the
warm-up, and every checked score exact.

Under a limit: the same kind of session in a cgroup v1 memory group whose hard limit kills any
process that outgrows it, as YARN and Kubernetes do. It asks for contributions of more models
than the limit holds (each with its TreeSHAP tables, about 113 MiB), and keeps scoring because
the budget evicts. The same job with a budget larger than the limit is killed, which shows the
limit is real.

A task's own memory: one task slot scoring batches of 200-feature models that fill
spark.treescore.batch.maxBytes, in every shape whose native working memory grows with the batch
(contributions of nested ensembles and routes, grids, cascades, top-K), on both engines. The
account's peak, less the models it holds, must stay within what the automatic budget leaves each
task slot: batch.maxBytes and the working allowance.

Each session runs in a child process (helpers/native_memory_job.py), so what is measured is its
own."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import features, train, write_parquet

JOB = os.path.join(os.path.dirname(__file__), "helpers", "native_memory_job.py")
CGROUP_MEMORY = Path("/sys/fs/cgroup/memory")
MIB = 1 << 20


def run_job(folder: Path, spec: dict, cgroup: Path = None, timeout: int = 600) -> subprocess.CompletedProcess:
    spec_path, report_path = folder / "spec.json", folder / "report.json"
    spec_path.write_text(json.dumps(spec))
    command = [sys.executable, JOB, str(spec_path), str(report_path)]
    if cgroup is not None:  # the child joins the group before it starts anything
        command = ["sh", "-c", f'echo $$ > {cgroup}/cgroup.procs && exec "$0" "$@"', *command]
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)


def rows_file(folder: Path, rows: int) -> str:
    x = features(rows, seed=11)
    path = folder / "rows.parquet"
    write_parquet(str(path), x, np.isnan(x))
    return str(path)


@pytest.fixture(scope="module")
def soak(tmp_path_factory):
    folder = tmp_path_factory.mktemp("soak")
    models = []
    for i in range(14):
        path = folder / f"model{i}.txt"
        train("binary" if i % 2 else "regression", rounds=30 + 4 * i, seed=i + 1).save_model(str(path))
        models.append(str(path))
    spec = {"models": models, "rows": rows_file(folder, 2_000), "budget": "48m", "queries": 300, "warmup": 60,
            "driver_memory": "1g"}
    done = run_job(folder, spec)
    assert done.returncode == 0, done.stderr[-6000:]
    return spec, json.loads((folder / "report.json").read_text())


def describe(reading: dict) -> str:
    native = ", ".join(f"{kind} {value / MIB:.2f}" for kind, value in reading["native"].items())
    return (f"RSS {reading['rss'] / MIB:.0f} MiB (heap committed {reading['heap_committed'] / MIB:.0f}, used "
            f"{reading['heap_used'] / MIB:.0f}; C allocator in use {reading['c_allocator_in_use'] / MIB:.0f}); native {native} MiB, peak {reading['native_peak'] / MIB:.1f} MiB; "
            f"{reading['models_loaded']} models loaded, {reading['evictions']} evictions")


def test_soak_scores_exactly_and_memory_stays_flat(soak):
    spec, report = soak
    warmup, end = report["warmup"], report["end"]
    print(f"after warm-up ({spec['warmup']} queries): {describe(warmup)}\n"
          f"at the end ({spec['queries']} queries): {describe(end)}")
    assert report["checked"] == spec["queries"], "every query was checked"
    assert end["evictions"] - warmup["evictions"] >= 100, "the budget made models churn"
    for reading in (warmup, end):
        assert reading["native"]["buffers"] == 0 and reading["native"]["programs"] == 0, "no task is running"
        assert reading["native"]["models"] <= reading["budget"], "idle models within the budget"
    assert end["native"]["working"] - warmup["native"]["working"] < MIB
    assert end["native_total"] <= warmup["native_total"] + end["budget"]
    assert end["c_allocator_in_use"] <= warmup["c_allocator_in_use"] + 32 * MIB, "the C allocator's bytes in use flat"
    assert end["rss"] <= 1.15 * warmup["rss"] + 64 * MIB, "resident memory flat after the warm-up"


WIDE_FEATURES = 200


@pytest.mark.parametrize("engine", ["auto", "lightgbm"])
def test_a_tasks_native_memory_stays_within_its_slots_reserve(spark, tmp_path, engine):
    rng = np.random.default_rng(17)
    names = [f"x{j}" for j in range(WIDE_FEATURES)]
    x = rng.normal(size=(3_000, WIDE_FEATURES))
    y = x[:, 0] - x[:, 1] * x[:, 2] + np.sin(x[:, 3])
    models = []
    for i in range(4):
        params = {"objective": "binary" if i % 2 else "regression", "num_leaves": 15, "verbose": -1, "num_threads": 1,
                  "seed": i}
        booster = lgb.train(params, lgb.Dataset(x, (y > 0).astype(float) if i % 2 else y, feature_name=names), 20 + i)
        models.append(str(tmp_path / f"wide{i}.txt"))
        booster.save_model(models[-1])
    rows = rng.normal(size=(6_000, WIDE_FEATURES))
    columns = {"id": pa.array(np.arange(len(rows), dtype=np.int64))}
    columns.update({name: pa.array(rows[:, j]) for j, name in enumerate(names)})
    pq.write_table(pa.table(columns), str(tmp_path / "rows.parquet"))
    kinds = ["prediction", "contrib", "route", "cascade", "grid", "ensemble_contrib", "nested_contrib"]
    if engine == "auto":
        kinds.append("top_k")  # top-K selection runs on treescore's engine only
    spec = {"models": models, "rows": str(tmp_path / "rows.parquet"), "budget": "1g", "queries": len(kinds),
            "warmup": 1, "driver_memory": "1g", "kinds": kinds, "master": "local[1]",
            "conf": {"spark.treescore.engine": engine}}
    done = run_job(tmp_path, spec)
    assert done.returncode == 0, done.stderr[-6000:]
    end = json.loads((tmp_path / "report.json").read_text())["end"]
    assert end["evictions"] == 0, "the models stayed loaded, so the peak held them all at most"
    batch_max_bytes = spark._jvm.treescore.TreescoreConf.BatchMaxBytes().read(spark._jvm.scala.Option.empty())
    slot = batch_max_bytes + spark._jvm.treescore.nativelib.CacheBudget.WorkingReserveBytes()
    task_peak = end["native_peak"] - end["native"]["models"]
    print(f"engine {engine}: peak {end['native_peak'] / MIB:.1f} MiB, models {end['native']['models'] / MIB:.1f} MiB: "
          f"the task's own peak {task_peak / MIB:.1f} MiB of a slot's {slot / MIB:.0f} MiB")
    assert task_peak <= slot


@pytest.fixture(scope="module")
def heavy_models(spark, tmp_path_factory):
    """Sixteen models whose TreeSHAP tables take about 111 MiB each: one model, trained once,
    saved with 1 to 16 trailing newlines, which make them distinct models to the cache. Also the
    native bytes each needs for its contributions, as the driver estimates them."""
    folder = tmp_path_factory.mktemp("heavy")
    text = train("regression", rounds=300).model_to_string()
    paths = []
    for i in range(16):
        path = folder / f"variant{i}.txt"
        path.write_text(text + "\n" * (i + 1))
        paths.append(str(path))
    estimate = spark._jvm.treescore.model.TreeModel.fromString(text)
    return folder, paths, estimate.shapTables().tableBytes() + len(text)


def memory_group(name: str, limit: int) -> Path:
    assert os.access(CGROUP_MEMORY, os.W_OK), (
        f"this test needs a writable cgroup v1 memory hierarchy at {CGROUP_MEMORY} (run as root)")
    group = CGROUP_MEMORY / name
    group.mkdir(exist_ok=True)
    (group / "memory.limit_in_bytes").write_text(str(limit))
    (group / "memory.memsw.limit_in_bytes").write_text(str(limit))  # no swap either
    return group


def remove_group(group: Path) -> None:
    """Kills what is left in the group (a JVM whose Python parent was killed), then removes it."""
    for _ in range(100):
        pids = (group / "cgroup.procs").read_text().split()
        if not pids:
            group.rmdir()
            return
        for pid in pids:
            try:
                os.kill(int(pid), 9)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    raise AssertionError(f"processes {pids} in {group} outlived SIGKILL")


def read_group(group: Path) -> dict:
    oom = dict(line.split() for line in (group / "memory.oom_control").read_text().splitlines())
    return {"max_usage": int((group / "memory.max_usage_in_bytes").read_text()), "oom_kills": int(oom["oom_kill"])}


@pytest.mark.parametrize("budget, survives", [("200m", True), ("8g", False)], ids=["evicting", "unbounded"])
def test_a_hard_memory_limit_holds_when_the_budget_evicts(heavy_models, budget, survives):
    folder, models, each = heavy_models
    run_folder = folder / budget
    run_folder.mkdir()
    limit = 1536 * MIB
    group = memory_group(f"treescore-test-{os.getpid()}-{budget}", limit)
    try:
        spec = {"models": models, "rows": rows_file(run_folder, 1_000), "budget": budget, "queries": len(models),
                "warmup": 1, "driver_memory": "512m", "kinds": ["contrib"]}
        done = run_job(run_folder, spec, cgroup=group)
        seen = read_group(group)
    finally:
        remove_group(group)
    asked = len(models) * each
    print(f"budget {budget}: {len(models)} models asking about {asked / MIB:.0f} MiB under a {limit / MIB:.0f} MiB "
          f"limit; exit {done.returncode}, peak usage {seen['max_usage'] / MIB:.0f} MiB, "
          f"{seen['oom_kills']} processes killed")
    assert asked > limit
    if survives:
        assert done.returncode == 0, done.stderr[-6000:]
        assert seen["oom_kills"] == 0
        report = json.loads((run_folder / "report.json").read_text())
        assert report["checked"] == len(models), "every model's contributions equal lightgbm's"
        assert report["end"]["evictions"] >= len(models) - 2
        print(f"at the end: {describe(report['end'])}")
    else:
        assert done.returncode != 0 and seen["oom_kills"] >= 1, "without eviction the limit kills the job"
