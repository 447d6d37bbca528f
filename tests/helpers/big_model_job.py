"""Child process of test_big_model.py: loads one (large) model file in a Spark session whose
driver has room for it, scores a Parquet file with it and saves the scores and timings.

Usage: python big_model_job.py <model file> <rows.parquet> <out folder> <driver memory>
"""
import json
import os
import sys
import time

import numpy as np
from pyspark.sql import SparkSession

import treescore


def main(model_path, rows_path, out, driver_memory):
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("treescore-big-model")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", driver_memory)
    )
    spark = treescore.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    timings = {}
    started = time.monotonic()
    model = treescore.Model.load(model_path)
    timings["load_and_validate_s"] = time.monotonic() - started
    started = time.monotonic()
    scored = spark.read.parquet(rows_path).select("id", treescore.score(model).alias("s"))
    values = scored.orderBy("id").toPandas()["s"].to_numpy()
    timings["score_s"] = time.monotonic() - started
    timings["num_trees"] = model._java_model.numTrees()
    np.save(os.path.join(out, "scores.npy"), values)
    with open(os.path.join(out, "timings.json"), "w") as f:
        json.dump(timings, f)
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
