"""Access to the JVM of the active Spark session (classic PySpark, through py4j)."""
from pyspark import SparkContext
from pyspark.sql import SparkSession


def active_jvm():
    """The py4j JVM view of the running SparkContext; raises if there is none."""
    sc = SparkContext._active_spark_context
    if sc is None or sc._jvm is None:
        raise RuntimeError(
            "treescore needs an active SparkSession: create one with "
            "treescore.configure(SparkSession.builder).getOrCreate() first"
        )
    return sc._jvm


def active_session() -> SparkSession:
    session = SparkSession.getActiveSession()
    if session is None:
        raise RuntimeError("treescore needs an active SparkSession")
    return session
