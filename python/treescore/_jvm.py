"""Access to the JVM of the active Spark session (classic PySpark, through py4j).

py4j is imported only here and only when called, so treescore imports and scores on a Spark
Connect client (pyspark-client), where py4j is absent; see treescore._connect.
"""
from pyspark.sql import SparkSession


def active_jvm():
    """The py4j JVM view of the running SparkContext; raises if there is none."""
    from pyspark import SparkContext

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


def java_column_seq(columns):
    """A py4j Scala Seq of the Java columns behind `columns` (names or Columns)."""
    from pyspark import SparkContext

    try:  # PySpark 4.x keeps the py4j column helpers in pyspark.sql.classic
        from pyspark.sql.classic.column import _to_java_column, _to_seq
    except ImportError:  # PySpark 3.5
        from pyspark.sql.column import _to_java_column, _to_seq
    return _to_seq(SparkContext._active_spark_context, [_to_java_column(c) for c in columns])
