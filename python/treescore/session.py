"""Wiring treescore into a SparkSession, in the style of Delta's configure_spark_with_delta_pip."""
import os

from pyspark.sql import SparkSession

EXTENSIONS = "treescore.TreescoreExtensions"


def jar_path() -> str:
    """The treescore jar shipped inside this package (classes plus native libraries)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jars", "treescore.jar")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"treescore's jar is missing from the installed package: {path}")
    return path


def _append(builder: SparkSession.Builder, key: str, value: str, separator: str) -> None:
    existing = getattr(builder, "_options", {}).get(key)
    parts = [p for p in (existing or "").split(separator) if p]
    if value not in parts:
        parts.append(value)
    builder.config(key, separator.join(parts))


def configure(builder: SparkSession.Builder) -> SparkSession.Builder:
    """Adds the bundled jar and treescore's extensions to a session builder and returns it.

    >>> spark = treescore.configure(SparkSession.builder.master("local[*]")).getOrCreate()

    spark.jars ships the jar to every executor; the driver also gets it on its class path,
    so that Python can reach treescore's JVM functions.
    """
    jar = jar_path()
    _append(builder, "spark.jars", jar, ",")
    _append(builder, "spark.driver.extraClassPath", jar, os.pathsep)
    _append(builder, "spark.sql.extensions", EXTENSIONS, ",")
    return builder
