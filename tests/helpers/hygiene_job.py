"""Child process of test_resource_hygiene.py: one Spark session with its own java.io.tmpdir,
one job (scored by treescore with two native threads per task, on each engine, or a plain job as the
baseline), then spark.stop(); reports the driver JVM's threads and temporary files as JSON.

Usage: python hygiene_job.py score|plain <tmpdir> <local dir> <model file> <report.json>
"""
import json
import os
import sys
import time

from pyspark import SparkContext
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import treescore


def native_threads(pid: int):
    """The names (comm) of every OS thread of the JVM: Java threads, GC and JIT threads, native threads."""
    names = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                names.append(f.read().strip())
        except FileNotFoundError:  # the thread ended while we looked
            pass
    return sorted(names)


def java_threads(jvm):
    threads = jvm.java.lang.Thread.getAllStackTraces().keySet().toArray()
    return sorted(t.getName() for t in threads if t.isAlive())


def settled(read, seconds=20.0):
    """read() once it returns the same value twice in a row a second apart: stopping threads take a moment."""
    last = read()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(1.0)
        current = read()
        if current == last:
            return current
        last = current
    return last


def main(mode, tmpdir, local_dir, model_path, report_path):
    builder = (
        SparkSession.builder.master("local[2]")
        .appName(f"treescore-hygiene-{mode}")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.extraJavaOptions", f"-Djava.io.tmpdir={tmpdir}")
        .config("spark.local.dir", local_dir)  # Spark's own scratch space, kept apart from tmpdir
        # So treescore's engine starts threads of its own: a call runs on at most its task's cores.
        .config("spark.treescore.native.threads", "2")
        .config("spark.task.cpus", "2")
    )
    spark = treescore.configure(builder).getOrCreate()
    jvm = spark.sparkContext._jvm
    pid = jvm.java.lang.ProcessHandle.current().pid()
    report = {"pid": pid, "java_tmpdir": jvm.java.lang.System.getProperty("java.io.tmpdir")}
    rows = spark.range(200_000, numPartitions=4).select(*[F.rand(j).alias(f"x{j}") for j in range(8)])
    if mode == "score":
        model = treescore.Model.load(model_path)
        # treescore's engine runs its second thread per call and joins it. Both engines run
        # before spark.stop().
        total = rows.select(treescore.score(model).alias("s")).agg(F.sum("s")).collect()[0][0]
        spark.conf.set("spark.treescore.engine", "lightgbm")
        total = rows.select(treescore.score(model).alias("s")).agg(F.sum("s")).collect()[0][0]
    else:  # two queries too, so Spark's own per-query thread pools match
        total = rows.select((F.col("x0") * 2).alias("s")).agg(F.sum("s")).collect()[0][0]
        total = rows.select((F.col("x1") * 2).alias("s")).agg(F.sum("s")).collect()[0][0]
    assert total is not None
    report["tmp_while_running"] = sorted(os.listdir(tmpdir))
    spark.stop()
    jvm = SparkContext._jvm  # the py4j gateway outlives the SparkContext
    report["java_threads_after_stop"] = settled(lambda: java_threads(jvm))
    report["native_threads_after_stop"] = settled(lambda: native_threads(pid))
    report["tmp_after_stop"] = sorted(os.listdir(tmpdir))
    with open(report_path, "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:])
