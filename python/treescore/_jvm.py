"""Access to the JVM of the active Spark session (classic PySpark, through py4j).

py4j is imported only here and only when called, so treescore imports and scores on a Spark
Connect client (pyspark-client), where py4j is absent; see treescore._connect.
"""
import weakref

from pyspark.sql import SparkSession

from treescore.jars import coordinate, jar_path

_with_jar = weakref.WeakSet()  # the JVM views already found to have treescore's classes


def active_jvm():
    """The py4j JVM view of the running SparkContext; raises if there is none, or if its driver
    lacks treescore's jar."""
    from pyspark import SparkContext

    sc = SparkContext._active_spark_context
    if sc is None or sc._jvm is None:
        raise RuntimeError(
            "treescore needs an active SparkSession: create one with "
            "treescore.configure(SparkSession.builder).getOrCreate() first"
        )
    return require_jar(sc._jvm)


def require_jar(jvm):
    """`jvm`, once it is known to have treescore's classes; else an error that says how to add
    them, where py4j would only say "'JavaPackage' object is not callable"."""
    from py4j.java_gateway import JavaClass

    if jvm in _with_jar:
        return jvm
    if not isinstance(jvm.treescore.TreescoreExtensions, JavaClass):
        try:
            ways = (f"spark.jars.packages={coordinate()} (treescore.jars.coordinate()), or spark.jars and "
                    f"spark.driver.extraClassPath={jar_path()} (treescore.jar_path())")
        except (RuntimeError, FileNotFoundError) as e:  # no jar for this pyspark: say that too
            ways = f"a treescore jar for this Spark ({e})"
        raise RuntimeError(
            "treescore's jar is not on this Spark driver's class path, so its JVM classes cannot be reached. "
            "Start the session with treescore.configure(SparkSession.builder), or add the jar before the session "
            f"starts: {ways}; on a cluster, install it as a cluster library by that coordinate. A session that "
            "runs already cannot take a jar onto its driver's class path.")
    _with_jar.add(jvm)
    return jvm


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
