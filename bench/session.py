"""The Spark session every Spark method shares, and small helpers around it."""
import os
import sys
from contextlib import contextmanager
from typing import Dict, Optional, Tuple

from bench.config import CORES

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start(driver_memory: str, java_options: str = "", extra: Optional[Dict[str, str]] = None):
    """The bench's local[2] session with treescore's jar and extensions; `extra` adds settings
    (bench/synapse.py: SynapseML's Maven packages)."""
    from pyspark.sql import SparkSession

    import treescore

    # Python workers must run this interpreter (it has lightgbm, pandas, pyarrow) and must be
    # able to import bench.pyworker, whose module-level model cache lives once per worker.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [REPO_ROOT, os.environ.get("PYTHONPATH")] if p)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (
        SparkSession.builder.master(f"local[{CORES}]").appName("treescore-bench")
        .config("spark.driver.memory", driver_memory)  # holds the cached DataFrames
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(2 * CORES))
    )
    if java_options:
        builder = builder.config("spark.driver.extraJavaOptions", java_options)
    for key, value in (extra or {}).items():
        builder = builder.config(key, value)
    spark = treescore.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def jvm_pid(spark) -> int:
    return int(spark._jvm.java.lang.ProcessHandle.current().pid())


def collect_jvm_garbage(spark) -> None:
    """A full GC lets G1 give heap back to the OS, so one method's garbage is not the next one's RSS."""
    spark._jvm.java.lang.System.gc()


@contextmanager
def conf(spark, settings: Dict[str, str]):
    """Session settings for the duration of a block; previous values restored afterwards."""
    previous = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, str(value))
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def noop_write(frame) -> None:
    """Runs the whole query and discards the output: the talk's way to time scoring alone."""
    frame.write.format("noop").mode("overwrite").save()


def _plan_nodes(plan):
    stack = [plan]
    while stack:
        node = stack.pop()
        yield node
        kind = node.getClass().getSimpleName()
        if kind == "AdaptiveSparkPlanExec":  # after execution: the final plan, a tree of query stages
            stack.append(node.executedPlan())
        elif kind.endswith("QueryStageExec"):  # a stage is a leaf that holds its plan
            stack.append(node.plan())
        children = node.children()
        stack.extend(children.apply(i) for i in range(children.size()))


BATCH_SCORE_METRICS = ("numOutputRows", "numBatches", "inputTime", "featureWriteTime", "nativeTime", "modelLoadTime",
                       "featureValuesWritten", "featureValuesInPlace", "escalatedRows", "topKRowsDropped",
                       "topKTreesEvaluated", "topKTreesInFull")


def batch_score_metrics(frame) -> Tuple[Optional[Dict[str, int]], str]:
    """Runs the frame's own physical plan once; returns its BatchScore node's SQL metrics and
    which input it read ("column vectors" or "rows").

    A DataFrameWriter plans a new query, so the timed noop writes leave this frame's plan
    untouched; executing queryExecution().toRdd() runs exactly this plan and fills its metrics.
    Returns (None, "") if the plan has no BatchScore node (the rule did not fire).
    """
    execution = frame._jdf.queryExecution()
    execution.toRdd().count()
    for node in _plan_nodes(execution.executedPlan()):
        if node.nodeName() == "BatchScore":
            metrics = node.metrics()
            path = "column vectors" if "columnar input" in node.simpleString(100) else "rows"
            return {name: int(metrics.apply(name).value()) for name in BATCH_SCORE_METRICS}, path
    return None, ""


def stage_totals(spark) -> Dict[int, Tuple[int, int]]:
    """Per stage of this application: (sum of task run times in ms, sum of task CPU times in ns),
    from Spark's status store (what the UI's stage pages show)."""
    jvm = spark._jvm
    empty = spark.sparkContext._gateway.new_array(jvm.double, 0)
    stages = spark._jsc.sc().statusStore().stageList(jvm.java.util.ArrayList(), False, False, empty,
                                                      jvm.java.util.ArrayList())
    totals = {}
    for i in range(stages.size()):
        stage = stages.apply(i)
        totals[int(stage.stageId())] = (int(stage.executorRunTime()), int(stage.executorCpuTime()))
    return totals


def plan_has_batch_score(frame) -> bool:
    return "BatchScore" in frame._jdf.queryExecution().executedPlan().toString()
