"""treescore on a real multi-process cluster: a standalone master and two workers (4 cores each,
on this 2-core machine) started from the Spark that pyspark ships, with a job submitted in client
mode by the python of a fresh virtualenv that has only the built wheel, from outside the tree.

Checked: the jar and its native libraries reach the executors with no manual step; scores equal
a single-threaded local-mode run and lightgbm's Booster.predict bit for bit; each executor parses
the model once while 4 tasks share it, within the model budget `auto` derives from its memory; and a job that loses a worker in the middle and has a task
fail on purpose still writes every row exactly once, with the same scores.
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import treescore
from conftest import FEATURE_NAMES, assert_same_bits, features, train
from helpers.standalone_cluster import Daemon, StandaloneCluster, free_port, http_json, kill_processes_in

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
FILES = 24             # one Parquet file per partition (see SPLIT_CONF), 3 waves of 8 task slots
ROWS_PER_FILE = 2_500
CORES = 4              # per worker and executor: 8 task slots on a 2-core machine
FAILING_PARTITION = 5
PARSED = re.compile(r"treescore: parsed model (\w{12}) ")
AUTO_BUDGET = re.compile(r"treescore: the model cache's budget is (\d+) MiB \(spark\.treescore\.cache\.maxBytes=auto: "
                         r"\d+ MiB of the executor's default memory overhead \((\d+) MiB: .*?\), after (\d+) MiB for "
                         r"the JVM and (\d+) MiB for (\d+) task slots' buffers and working memory\)")

# Each file its own partition: files are far smaller than a split, and opening one costs a split.
SPLIT_CONF = ["spark.sql.files.maxPartitionBytes=64m", "spark.sql.files.openCostInBytes=64m"]


@dataclass
class Inputs:
    model: Path
    data: Path
    predicted: np.ndarray  # lightgbm's Booster.predict, by row id
    sha12: str


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Inputs:
    root = tmp_path_factory.mktemp("cluster-inputs")
    booster = train("regression", rounds=60, seed=5)
    model = root / "model.txt"
    booster.save_model(str(model))
    x = features(FILES * ROWS_PER_FILE, seed=17)  # with NaNs, written as nulls
    data = root / "rows"
    data.mkdir()
    for f in range(FILES):
        part = slice(f * ROWS_PER_FILE, (f + 1) * ROWS_PER_FILE)
        columns = {"id": pa.array(np.arange(part.start, part.stop, dtype=np.int64))}
        for j, name in enumerate(FEATURE_NAMES):
            columns[name] = pa.array(x[part, j], mask=np.isnan(x[part, j]))
        pq.write_table(pa.table(columns), str(data / f"part-{f:03d}.parquet"))
    sha12 = hashlib.sha256(model.read_bytes()).hexdigest()[:12]
    return Inputs(model, data, booster.predict(x), sha12)


class Job:
    """cluster_job.py run by the fresh venv's python from a folder outside the source tree, in its
    own process group (it and its driver JVM) so that a failing test can kill all of it."""

    def __init__(self, venv, folder: Path, master: str, inputs: Inputs, conf=(), extra=()):
        folder.mkdir(parents=True)
        self.folder = folder
        self.out = folder / "scored"
        self.report = folder / "report.json"
        self.log = folder / "job.log"
        shutil.copy(HERE / "helpers" / "cluster_job.py", folder)  # run from here, so nothing of the source tree is on sys.path
        args = [venv.python, "cluster_job.py", "--master", master, "--model", str(inputs.model),
                "--data", str(inputs.data), "--out", str(self.out)]
        if "spark.ui.enabled=false" not in conf:  # the report comes from the driver's REST API
            args += ["--report", str(self.report)]
        for setting in [*SPLIT_CONF, "spark.ui.showConsoleProgress=false", *conf]:
            args += ["--conf", setting]
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen([*args, *extra], cwd=folder, env=venv.env(), stdout=log,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)
        self.daemon = Daemon("job", self.process, self.log)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def app(self, timeout: float = 180):
        """(application id, driver web UI url), once the driver is up."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(r"^APP (\S+) (\S+)$", self.output(), re.M)
            if found:
                return found.group(1), found.group(2)
            assert self.process.poll() is None, "the job ended before starting:\n" + self.output()[-5000:]
            time.sleep(0.2)
        raise TimeoutError("the job's driver did not start:\n" + self.output()[-5000:])

    def wait(self, timeout: float = 300) -> None:
        try:
            self.process.wait(timeout=timeout)
        finally:
            self.kill()
        output = self.output()
        assert self.process.returncode == 0 and "JOB-OK" in output, output[-8000:]

    def kill(self) -> None:
        """Kills the job's python and driver JVM (a no-op once they have ended); fails if one survives."""
        self.daemon.kill()
        assert not self.daemon.alive() and not kill_processes_in(self.folder, timeout=0), "the job left processes"

    def scores(self) -> np.ndarray:
        """The written scores by row id, after checking every id is there exactly once."""
        table = pq.read_table(str(self.out))
        ids = table.column("id").to_numpy()
        order = np.argsort(ids, kind="stable")
        assert_same_bits(ids[order], np.arange(FILES * ROWS_PER_FILE), f"rows missing or duplicated: {len(ids)} rows, {len(np.unique(ids))} distinct ids")
        return table.column("score").to_numpy()[order]

    def report_json(self):
        return json.loads(self.report.read_text())


def run_cluster_job(venv, folder: Path, cluster: StandaloneCluster, inputs: Inputs, extra=()) -> Job:
    conf = ["spark.driver.host=127.0.0.1", "spark.driver.bindAddress=127.0.0.1",
            f"spark.ui.port={free_port()}",
            f"spark.executor.cores={CORES}", f"spark.cores.max={CORES * cluster.num_workers}",
            "spark.executor.memory=512m", "spark.driver.memory=512m", "spark.task.maxFailures=4",
            # Schedule nothing before both executors are up, so that both take part from the start.
            "spark.scheduler.minRegisteredResourcesRatio=1.0", "spark.scheduler.maxRegisteredResourcesWaitingTime=180s",
            f"spark.executor.extraJavaOptions=-Dlog4j.configurationFile={HERE / 'helpers' / 'cluster_log4j2.properties'}"]
    return Job(venv, folder, cluster.master_url, inputs, conf, extra)


@pytest.fixture(scope="module")
def local_scores(wheel_venv, inputs, tmp_path_factory) -> np.ndarray:
    """The reference: the same job in local mode on one thread."""
    job = Job(wheel_venv, tmp_path_factory.mktemp("local") / "job", "local[1]", inputs,
              ["spark.ui.enabled=false", "spark.driver.host=127.0.0.1", "spark.driver.bindAddress=127.0.0.1"])
    job.wait()
    scores = job.scores()
    assert_same_bits(scores, inputs.predicted, "local mode differs from Booster.predict")
    return scores


@pytest.fixture
def cluster(wheel_venv, tmp_path):
    with StandaloneCluster(wheel_venv.spark_home, tmp_path / "cluster", workers=2, cores=CORES) as running:
        yield running
    # __exit__ killed every daemon and executor and checked that none survived


def scoring_stage(report):
    """Every task attempt of the stage that reads, [injects faults,] scores and writes: the one with a
    task per file (the other stage reads a Parquet footer for the schema)."""
    stages = [stage for stage in report["stages"] if stage["numTasks"] == FILES]
    assert len(stages) == 1, [(stage["stageId"], stage["numTasks"], stage["status"]) for stage in report["stages"]]
    return stages[0]["stageId"], list(stages[0]["tasks"].values())


def peak_running(executor_log: str, stage_id: int) -> int:
    """How many tasks of a stage an executor ran at the same moment, at most, from its own log
    (the driver's task times include its delay in handling results, so they overlap too much)."""
    running = peak = 0
    for event, stage in re.findall(r"Executor: (Running|Finished) task \S+ in stage (\d+)\.", executor_log):
        if int(stage) == stage_id:
            running += 1 if event == "Running" else -1
            peak = max(peak, running)
    return peak


def scoring_executor_logs(cluster: StandaloneCluster, report) -> dict:
    """The logs of the executors that ran tasks. The standalone master replaces an executor that
    exits before its application ends; one that ran no task never ran treescore code (the jar and
    the native libraries arrive with a task), so it is reported as a warning, with the reason Spark
    gave, and left out. One that ran anything, treescore's included, fails the test."""
    executors = {e["id"]: e for e in report["executors"]}  # an executor that never registered is not there
    logs = {}
    for name, text in cluster.executor_logs().items():
        executor = executors.get(name.rsplit("/", 1)[1], {})
        if "Running task" in text or "treescore:" in text:
            logs[name] = text
            continue
        assert not executor.get("isActive"), (name, "an active executor ran no task", text[-3000:])
        warnings.warn(f"Spark replaced executor {name} before it ran a task: {cluster.executor_exit(name)!r}, "
                      f"driver: {executor.get('removeReason')!r}; its log ends:\n{text[-1500:]}")
    return logs


def test_cluster_scores_equal_local_mode_with_one_parse_per_executor(wheel_venv, inputs, local_scores,
                                                                     cluster, tmp_path):
    job = run_cluster_job(wheel_venv, tmp_path / "job", cluster, inputs)
    job.wait()

    scores = job.scores()
    assert_same_bits(scores, local_scores, "cluster scores differ from local mode")
    assert_same_bits(scores, inputs.predicted, "cluster scores differ from Booster.predict")

    report = job.report_json()
    stage_id, tasks = scoring_stage(report)
    # Every scoring task succeeded at its first attempt: no executor was lost while it scored.
    retried = [(t["index"], t["attempt"], t["status"], t.get("errorMessage", "")[:300])
               for t in tasks if t["status"] != "SUCCESS"]
    assert len(tasks) == FILES and not retried, retried

    # One executor per worker, each with 4 task slots, each of which ran tasks.
    logs = scoring_executor_logs(cluster, report)
    assert {name.split("/")[0] for name in logs} == {"worker0", "worker1"}, list(logs)
    executors = [e for e in report["executors"] if e["id"] != "driver" and e["isActive"]]
    assert sorted(e["id"] for e in executors) == sorted(name.rsplit("/", 1)[1] for name in logs), executors
    assert [e["totalCores"] for e in executors] == [CORES, CORES], executors
    by_executor = {e["id"]: [t for t in tasks if t["executorId"] == e["id"]] for e in executors}
    assert all(by_executor.values()), {k: len(v) for k, v in by_executor.items()}

    for name, text in logs.items():
        # The jar arrived the way Spark ships spark.jars, not on the executor's class path ...
        command = next(line for line in text.splitlines() if line.startswith("Spark Executor Command"))
        jar = os.path.basename(treescore.jar_path())  # the jar for this Spark line
        assert jar not in command, command
        assert re.search(rf"Fetching spark://127\.0\.0\.1:\d+/jars/{re.escape(jar)}", text), text[-4000:]
        # ... and the native library was loaded from that copy of the jar, in the executor's folder.
        loaded = re.search(r"treescore: loaded native library libtreescore_jni\.so .* from (\S+)", text)
        assert loaded, text[-4000:]
        executor_folder = f"file:{cluster.root / name}/"
        assert loaded.group(1).startswith(executor_folder), (loaded.group(1), executor_folder)
        # Each executor parsed the model once, though 4 of its tasks scored with it at the same time.
        assert PARSED.findall(text) == [inputs.sha12], (name, PARSED.findall(text))
        # Its model budget is what `auto` leaves of the overhead Spark gives a 512m executor: 10%,
        # at least 384 MiB, less the JVM's reserve and per task slot a batch's buffers and the working allowance.
        budget = AUTO_BUDGET.search(text)
        assert budget, text[-4000:]
        models, overhead, jvm, task_memory, slots = map(int, budget.groups())
        assert overhead == max(512 // 10, 384) and slots == CORES, budget.group(0)
        assert models == overhead - jvm - task_memory > 0, budget.group(0)
        assert "cannot hold treescore's native memory" not in text, text[-4000:]
        assert peak_running(text, stage_id) == CORES, (name, peak_running(text, stage_id))


def test_cluster_job_survives_a_lost_worker_and_a_failed_task(wheel_venv, inputs, local_scores, cluster, tmp_path):
    # Every task holds its slot for 2 s, so 24 tasks on 8 slots take 3 waves: the kill lands in the second.
    job = run_cluster_job(wheel_venv, tmp_path / "job", cluster, inputs,
                          extra=["--fail-partition", str(FAILING_PARTITION), "--sleep", "2"])
    try:
        app_id, ui = job.app()
        deadline = time.monotonic() + 240
        while True:
            assert time.monotonic() < deadline, "the job made no progress:\n" + job.output()[-5000:]
            assert job.process.poll() is None, "the job ended before the worker was killed:\n" + job.output()[-5000:]
            try:
                running = [j for j in http_json(f"{ui}/api/v1/applications/{app_id}/jobs") if j["status"] == "RUNNING"]
            except OSError:
                running = []
            if running and running[0]["numCompletedTasks"] >= CORES * 2:
                assert running[0]["numCompletedTasks"] < FILES - CORES, running[0]  # truly in the middle
                break
            time.sleep(0.2)
        cluster.kill_worker(1)
        assert not cluster.workers[1].alive()
    except BaseException:
        job.kill()
        raise
    job.wait()

    scores = job.scores()
    assert_same_bits(scores, local_scores, "scores after faults differ from a clean local run")
    assert_same_bits(scores, inputs.predicted, "scores after faults differ from Booster.predict")

    report = job.report_json()
    _, tasks = scoring_stage(report)
    failed = [t for t in tasks if t["status"] == "FAILED"]
    assert any(t["index"] == FAILING_PARTITION and t["attempt"] == 0
               and "deliberate failure" in t.get("errorMessage", "") for t in failed), failed
    lost = [t for t in failed if "deliberate failure" not in t.get("errorMessage", "")]
    assert lost and all("ExecutorLostFailure" in t.get("errorMessage", "") for t in lost), lost
    succeeded = sorted(t["index"] for t in tasks if t["status"] == "SUCCESS")
    assert succeeded == list(range(FILES)), succeeded  # each partition committed once
    executors = {e["id"]: e for e in report["executors"] if e["id"] != "driver" and e["totalTasks"]}
    assert sorted(e["isActive"] for e in executors.values()) == [False, True], executors

    # The surviving executor parsed the model once; the killed one at most once before it died.
    logs = scoring_executor_logs(cluster, report)
    parses = {name: PARSED.findall(text).count(inputs.sha12) for name, text in logs.items()}
    survivors = {name: n for name, n in parses.items() if name.startswith("worker0/")}
    assert list(survivors.values()) == [1], parses
    assert all(n <= 1 for n in parses.values()), parses
