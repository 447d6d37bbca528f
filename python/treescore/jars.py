"""treescore's JVM side, as the wheel carries it and as Maven publishes it: one jar per Spark line.

Catalyst internals change between Spark minor releases, so each line has a jar of its own, in
the wheel (treescore/jars/treescore-spark-<line>.jar) and in Maven
(io.github.treescore:treescore-spark_<line>_<scala>:<version>). Each carries treescore's
classes for that line and the native libraries of every supported platform.
"""
import glob
import os
import re
from importlib import metadata
from typing import List, Optional

import pyspark

JARS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jars")
GROUP = "io.github.treescore"


def supported_lines() -> List[str]:
    """The Spark lines ("3.5", "4.0", ...) this package carries a jar for (build/spark-lines.txt)."""
    names = os.listdir(JARS) if os.path.isdir(JARS) else []
    lines = [n[len("treescore-spark-"):-len(".jar")] for n in names if re.fullmatch(r"treescore-spark-\d+\.\d+\.jar", n)]
    return sorted(lines, key=lambda line: tuple(int(p) for p in line.split(".")))


def spark_line(version: str) -> str:
    """The "major.minor" line of a Spark version string such as "4.1.4" or "4.2.0.dev1"."""
    return ".".join(version.split(".")[:2])


def _supported(version: str) -> str:
    """The line of `version`, if this package supports it; else an error naming the lines it does."""
    line = spark_line(version)
    supported = supported_lines()
    if not supported:
        raise FileNotFoundError(f"treescore's jars are missing from the installed package: {JARS}")
    if line not in supported:
        raise RuntimeError(f"treescore: Spark {version} is not supported; this treescore supports Spark "
                           f"{', '.join(s + '.x' for s in supported)}")
    return line


def jar_path(spark_version: Optional[str] = None) -> str:
    """The treescore jar for a Spark version (by default the installed pyspark's)."""
    return os.path.join(JARS, f"treescore-spark-{_supported(spark_version or pyspark.__version__)}.jar")


def coordinate() -> str:
    """The Maven coordinate of treescore's jar for the installed pyspark, for spark.jars.packages:
    io.github.treescore:treescore-spark_<line>_<scala>:<treescore version>.

    The Scala suffix is that of the Scala library the pyspark install runs on."""
    version = metadata.version("treescore")
    line = _supported(pyspark.__version__)
    libraries = glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "scala-library-*.jar"))
    if len(libraries) != 1:
        raise RuntimeError(f"treescore: cannot tell the Scala version of this pyspark install (found {libraries} in "
                           "its jars folder); name the coordinate yourself: "
                           f"{GROUP}:treescore-spark_{line}_<scala binary version>:{version}")
    scala = ".".join(os.path.basename(libraries[0])[len("scala-library-"):].split(".")[:2])
    return f"{GROUP}:treescore-spark_{line}_{scala}:{version}"
