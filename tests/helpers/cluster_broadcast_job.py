"""Run by test_model_broadcast.py in its own process: scores with a model over the broadcast
threshold on a local cluster of two executor JVMs, and prints what it saw as JSON.

argv: model file, Parquet input. Needs SPARK_HOME (the pyspark install, or links to its bin and
jars) for the workers, which write their executors' logs under SPARK_HOME/work.
"""
import json
import sys
import urllib.request

from pyspark.sql import SparkSession

import treescore
from treescore import Model, score


def main(model_file: str, data: str) -> None:
    builder = (
        SparkSession.builder.master("local-cluster[2,1,1024]")
        .appName("treescore-broadcast-test")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.executor.memory", "768m")
        .config("spark.ui.port", "0")
        .config("spark.sql.adaptive.enabled", "false")  # keeps the 16 partitions asked for
        .config("spark.treescore.broadcast.thresholdBytes", "64k")
    )
    spark = treescore.configure(builder).getOrCreate()
    try:
        model = Model.load(model_file)
        frame = spark.read.parquet(data).repartition(16)
        first = frame.select("id", score(model).alias("p")).collect()
        again = frame.select("id", score(model).alias("p")).collect()  # a second job: the model is already there
        app = spark.sparkContext.applicationId
        url = f"{spark.sparkContext.uiWebUrl}/api/v1/applications/{app}/sql?details=true"
        with urllib.request.urlopen(url, timeout=30) as response:
            executions = json.load(response)
        print(json.dumps({
            "app_id": app,
            "model_hash": model.content_hash,
            "model_bytes": len(open(model_file).read()),
            "broadcast": model._java_model.isBroadcast(),
            "scores": {str(r["id"]): r["p"] for r in first},
            "scores_again": {str(r["id"]): r["p"] for r in again},
            "sql": executions,
        }))
    finally:
        spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
