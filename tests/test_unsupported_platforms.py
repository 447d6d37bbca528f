"""On a platform the jar has no natives for, the user gets one clear message: it names the platform
and its glibc, and lists the platforms treescore supports. The JVMs here claim to be riscv64
(-Dos.arch), an architecture the jar carries nothing for.

In local mode the driver scores, so planning fails on the driver before any job starts. On a
cluster the driver needs no natives (it may be a laptop of another platform): the executors'
tasks fail with the message, and the driver's exception carries it."""
import os
import pathlib
import subprocess
import sys
import textwrap

import pyspark
import pytest

from conftest import FEATURE_NAMES

JOB = textwrap.dedent("""
    import sys
    import lightgbm as lgb, numpy as np, pandas as pd
    from pyspark.sql import SparkSession
    import treescore
    from treescore import Model, score

    master, java_options, rows = sys.argv[1:]
    builder = (SparkSession.builder.master(master).config("spark.ui.enabled", "false")
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.task.maxFailures", "1"))
    for key in java_options.split(","):
        builder = builder.config(key, "-Dos.arch=riscv64")
    spark = treescore.configure(builder).getOrCreate()
    names = {names!r}
    x = np.random.default_rng(3).normal(size=(200, len(names)))
    booster = lgb.train({{"objective": "regression", "verbose": -1}}, lgb.Dataset(x, x[:, 0], feature_name=names), 5)
    # Read by the JVM (a local cluster has no python workers); uncompressed, as snappy-java too
    # loads natives by os.arch.
    pd.DataFrame(x, columns=names).to_parquet(rows, compression=None)
    frame = spark.read.parquet(rows)
    jobs = lambda: len(spark.sparkContext.statusTracker().getJobIdsForGroup(None))
    before = jobs()  # reading the schema may have run one
    try:
        frame.select(score(Model.from_booster(booster)).alias("s")).collect()
        print("SCORED")
    except Exception as e:
        print("JOBS", jobs() - before)
        print("ERROR", str(e).replace("\\n", " "))
""").format(names=FEATURE_NAMES)

EXPECTED = ("treescore has no native library for this platform: linux/riscv64 (glibc {glibc}; "
            "os.name=Linux, os.arch=riscv64). treescore's native libraries are for: "
            "linux/aarch64 with glibc 2.17 or newer, linux/x86_64 with glibc 2.17 or newer")


def glibc() -> str:
    return subprocess.run(["ldd", "--version"], capture_output=True, text=True, check=True).stdout.split("\n")[0].split()[-1]


def run(master: str, java_options: str, work: pathlib.Path, env: dict) -> dict:
    done = subprocess.run([sys.executable, "-c", JOB, master, java_options, str(work / "rows.parquet")],
                          capture_output=True, text=True,
                          timeout=600, env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", **env})
    assert done.returncode == 0, done.stderr[-5000:]
    return dict(line.split(" ", 1) for line in done.stdout.splitlines() if line.split(" ")[0] in ("SCORED", "JOBS", "ERROR"))


def test_in_local_mode_the_driver_refuses_before_any_job_runs(tmp_path):
    seen = run("local[1]", "spark.driver.extraJavaOptions", tmp_path, {})
    assert "SCORED" not in seen
    assert EXPECTED.format(glibc=glibc()) in seen["ERROR"], seen["ERROR"]
    assert seen["JOBS"] == "0"


@pytest.mark.slow
def test_on_a_cluster_the_executors_tasks_fail_with_the_message(tmp_path):
    # A local cluster's workers run from SPARK_HOME and keep executor logs under it: a SPARK_HOME
    # of links to the pyspark install keeps them in this test's folder.
    spark_home = tmp_path / "spark"
    spark_home.mkdir()
    for part in ("bin", "jars"):
        (spark_home / part).symlink_to(pathlib.Path(pyspark.__file__).parent / part)
    # The driver claims riscv64 too: planning there must not need natives.
    seen = run("local-cluster[1,1,1024]", "spark.driver.extraJavaOptions,spark.executor.extraJavaOptions", tmp_path,
               {"SPARK_HOME": str(spark_home)})
    assert "SCORED" not in seen
    assert EXPECTED.format(glibc=glibc()) in seen["ERROR"], seen["ERROR"]
    assert seen["JOBS"] == "1"
