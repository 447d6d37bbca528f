"""Wiring treescore into a SparkSession, in the style of Delta's configure_spark_with_delta_pip."""
import os
import re
from typing import List, Optional

import pyspark
from pyspark.sql import SparkSession

EXTENSIONS = "treescore.TreescoreExtensions"


JARS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jars")


def supported_lines() -> List[str]:
    """The Spark lines ("3.5", "4.0", ...) this package carries a jar for (build/spark-lines.txt)."""
    names = os.listdir(JARS) if os.path.isdir(JARS) else []
    lines = [n[len("treescore-spark-"):-len(".jar")] for n in names if re.fullmatch(r"treescore-spark-\d+\.\d+\.jar", n)]
    return sorted(lines, key=lambda line: tuple(int(p) for p in line.split(".")))


def spark_line(version: str) -> str:
    """The "major.minor" line of a Spark version string such as "4.1.4" or "4.2.0.dev1"."""
    return ".".join(version.split(".")[:2])


def jar_path(spark_version: Optional[str] = None) -> str:
    """The treescore jar for a Spark version (by default the installed pyspark's).

    The jar carries treescore's classes for that Spark line plus the native libraries. Catalyst
    internals change between Spark minor releases, so each line has a jar of its own.
    """
    version = spark_version or pyspark.__version__
    line = spark_line(version)
    supported = supported_lines()
    if not supported:
        raise FileNotFoundError(f"treescore's jars are missing from the installed package: {JARS}")
    if line not in supported:
        raise RuntimeError(f"treescore: Spark {version} is not supported; this treescore supports Spark "
                           f"{', '.join(s + '.x' for s in supported)}")
    return os.path.join(JARS, f"treescore-spark-{line}.jar")


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
