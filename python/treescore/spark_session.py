"""The SparkSession that treescore's own commands run in."""
import os
import sys

from pyspark.sql import SparkSession

from treescore.session import configure


def command_session(app_name: str, master: str) -> SparkSession:
    builder = SparkSession.builder.appName(app_name).master(master).config("spark.ui.showConsoleProgress", "false")
    if master.startswith("local") and "PYSPARK_PYTHON" not in os.environ:
        # Local Python workers (the demo's mapInPandas) must run in this interpreter's
        # environment, which has lightgbm and pyarrow, not whatever python3 is on PATH.
        # PySpark reads the worker interpreter from this variable only.
        os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
