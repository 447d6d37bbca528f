"""Resource hygiene: loading treescore's native libraries leaves no files in java.io.tmpdir, and
after spark.stop() no thread that treescore started is left.

Each run is a fresh Spark driver JVM in a child process (hygiene_job.py) with its own tmpdir:
one scores with treescore on each engine (two native threads per task, so treescore's engine
starts and joins threads),
the baseline runs a plain job. Thread lists are compared by name with digits removed."""
import json
import os
import re
import subprocess
import sys
from collections import Counter

import pytest

from conftest import train

# Threads the JVM starts and stops on its own schedule, whatever the job: JIT compilers, GC
# workers, the process reaper, and the JDK's shared ForkJoin pool, whose workers end after a
# minute idle (the scoring run's driver starts one; treescore's code does not use the pool).
JVM_MANAGED = re.compile(r"^(C1 CompilerThre|C2 CompilerThre|C1 CompilerThread|C2 CompilerThread|GC Thread|"
                         r"G1 Conc|G1 Refine|G1 Service|VM Periodic Tas|process reaper|Common-Cleaner|"
                         r"ForkJoinPool.co)")


def normalized(names):
    return Counter(re.sub(r"\d+", "#", name) for name in names if not JVM_MANAGED.match(name))


def run(mode, tmp_path, model_path):
    folder = tmp_path / mode
    tmpdir, local_dir = folder / "tmp", folder / "local"
    tmpdir.mkdir(parents=True)
    local_dir.mkdir()
    report = folder / "report.json"
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    job = os.path.join(os.path.dirname(__file__), "helpers", "hygiene_job.py")
    done = subprocess.run([sys.executable, job, mode, str(tmpdir), str(local_dir), model_path, str(report)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(report.read_text())
    assert result["java_tmpdir"] == str(tmpdir)
    return result


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("hygiene")
    model_path = str(tmp_path / "model.txt")
    train("regression", rounds=60).save_model(model_path)
    return run("score", tmp_path, model_path), run("plain", tmp_path, model_path)


def without_ids(files):
    """File names with their random parts (UUIDs, numbers) blanked, to compare two runs."""
    return sorted(re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\d+", "#", f) for f in files)


def test_native_library_extraction_leaves_no_temp_files(runs):
    # Spark itself keeps a few files there (lz4's native library, artifact and session folders)
    # until the JVM exits; treescore must add none, while running or after.
    scored, plain = runs
    assert without_ids(scored["tmp_while_running"]) == without_ids(plain["tmp_while_running"])
    assert without_ids(scored["tmp_after_stop"]) == without_ids(plain["tmp_after_stop"])
    assert not [f for f in scored["tmp_while_running"] + scored["tmp_after_stop"] if "treescore" in f]


def test_no_threads_left_after_spark_stop_beyond_a_plain_jobs(runs):
    scored, plain = runs
    extra_java = normalized(scored["java_threads_after_stop"]) - normalized(plain["java_threads_after_stop"])
    extra_native = normalized(scored["native_threads_after_stop"]) - normalized(plain["native_threads_after_stop"])
    assert not extra_java, extra_java
    assert not extra_native, extra_native
    assert not [name for name in scored["native_threads_after_stop"] if name.startswith("Executor task")]
    assert not [name for name in scored["java_threads_after_stop"] if "treescore" in name.lower()]
