"""Wiring treescore into a SparkSession: before it starts (configure, in the style of Delta's
configure_spark_with_delta_pip), or once it runs (enable)."""
import os
from typing import Optional

from pyspark.sql import SparkSession

from treescore import _connect
from treescore._jvm import require_jar
from treescore.jars import coordinate, jar_path

EXTENSIONS = "treescore.TreescoreExtensions"
PLUGIN = "treescore.TreescorePlugin"
SOURCES = ("wheel", "maven")


def _append(builder: SparkSession.Builder, key: str, value: str, separator: str) -> None:
    existing = getattr(builder, "_options", {}).get(key)
    parts = [p for p in (existing or "").split(separator) if p]
    if value not in parts:
        parts.append(value)
    builder.config(key, separator.join(parts))


def configure(builder: SparkSession.Builder, source: str = "wheel", repository: Optional[str] = None
              ) -> SparkSession.Builder:
    """Adds treescore's jar, extensions and plugin to a session builder and returns it.

    >>> spark = treescore.configure(SparkSession.builder.master("local[*]")).getOrCreate()

    source "wheel" (the default) uses the jar this package carries: spark.jars ships it to every
    executor, and the driver gets it on its class path, so that Python can reach treescore's JVM
    functions. source "maven" asks Spark to resolve treescore's Maven coordinate instead
    (spark.jars.packages, treescore.jars.coordinate()), from `repository` if given (added to
    spark.jars.repositories) as well as Spark's default ones.

    The plugin (spark.plugins) reports the native memory treescore holds through Spark's metrics
    system and warns at startup when the executors' memory overhead cannot hold it
    (docs/tuning.md, "Sizing native memory").
    """
    if source == "wheel":
        jar = jar_path()
        _append(builder, "spark.jars", jar, ",")
        _append(builder, "spark.driver.extraClassPath", jar, os.pathsep)
    elif source == "maven":
        _append(builder, "spark.jars.packages", coordinate(), ",")
        if repository:
            _append(builder, "spark.jars.repositories", repository, ",")
    else:
        raise ValueError(f"treescore: unknown jar source {source!r}; expected one of {', '.join(SOURCES)}")
    _append(builder, "spark.sql.extensions", EXTENSIONS, ",")
    _append(builder, "spark.plugins", PLUGIN, ",")
    return builder


def enable(spark: SparkSession) -> bool:
    """Gives a running session treescore's rules, planner strategy and SQL functions, as
    configure() gives a session at its start; returns False, doing nothing, if it has them.

    For notebooks that hand over a ready-made `spark` with treescore's jar on its class path (a
    cluster library, --packages or --jars) but without spark.sql.extensions. Scores are then
    batched as with configure(); one difference remains: a running session cannot take Spark's
    columnar rules, so a score over Parquet, ORC or the columnar cache reads rows, not column
    vectors (same bits, fewer rows per second: docs/tuning.md). Nor can it take a plugin: treescore's
    native memory metrics need spark.plugins=treescore.TreescorePlugin when the session starts.

    On Spark Connect the server's own configuration decides: this checks that the server has
    treescore's extensions, and raises, saying how to start it, if it has not.
    """
    if _connect.is_connect(spark):
        _connect.require_server_extensions(spark)
        return False
    jvm = require_jar(spark.sparkContext._jvm)
    return bool(jvm.treescore.TreescoreExtensions.enable(spark._jsparkSession))
