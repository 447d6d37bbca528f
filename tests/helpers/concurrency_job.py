"""Child process of test_concurrency.py: scores the same rows in three Spark sessions, one after
another in one JVM, and saves every score column as .npy for the test to compare.

A child process, because a Python process can hold one SparkContext at a time and the test
session's own is local[2]. The sessions, in order:

- `evicting`: local[8], cache budget 1 byte, six score columns (six models) and a route over
  three more, over 64 partitions, three such queries at once from three driver threads. Every
  model is freed as soon as no task holds it, so loads and evictions run while other tasks score.
- `shared`: local[8], the default budget, one model over 64 partitions: eight tasks at a time
  share one native model.
- `single`: local[1], the reference: one task at a time.

Usage: python concurrency_job.py <folder with models/*.txt and rows.parquet> <output folder>
"""
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import treescore
from treescore.ensembles import Routed

PARTITIONS = 64


def session(master: str, cache_bytes: str = None) -> SparkSession:
    builder = (
        SparkSession.builder.master(master)
        .appName(f"treescore-concurrency-{master}")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.treescore.batch.rows", "512")  # many batches per task
    )
    if cache_bytes is not None:
        builder = builder.config("spark.treescore.cache.maxBytes", cache_bytes)
    spark = treescore.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def columns(models):
    scores = [treescore.score(m).alias(f"m{i}") for i, m in enumerate(models[:6])]
    route = Routed("key", {str(k): models[6 + k] for k in range(3)})
    return scores + [treescore.score(route).alias("route")]


def collect(df, names):
    pdf = df.orderBy("id").toPandas()
    return {name: pdf[name].to_numpy() for name in names}


def main(folder: str, out: str) -> None:
    model_files = sorted(os.listdir(os.path.join(folder, "models")))
    names = [f"m{i}" for i in range(6)] + ["route"]
    report = {}

    spark = session("local[8]", cache_bytes="1")
    jvm = spark.sparkContext._jvm
    report["live_models_before"] = jvm.treescore.nativelib.NativeMethods.liveModelCount()
    models = [treescore.Model.load(os.path.join(folder, "models", f)) for f in model_files]
    rows = spark.read.parquet(os.path.join(folder, "rows.parquet")).withColumn("key", F.col("id") % 3)
    many = rows.repartition(PARTITIONS).select("id", *columns(models))
    with ThreadPoolExecutor(3) as pool:  # three jobs at once, all loading and evicting
        results = list(pool.map(lambda _: collect(many, names), range(3)))
    for n, result in enumerate(results):
        for name in names:
            np.save(os.path.join(out, f"evicting{n}_{name}.npy"), result[name])
    report["live_models_after"] = jvm.treescore.nativelib.NativeMethods.liveModelCount()
    report["cached_after"] = jvm.treescore.nativelib.ModelCache.loadedCount()
    spark.stop()

    spark = session("local[8]")
    models = [treescore.Model.load(os.path.join(folder, "models", f)) for f in model_files]
    rows = spark.read.parquet(os.path.join(folder, "rows.parquet"))
    shared = collect(rows.repartition(PARTITIONS).select("id", treescore.score(models[0]).alias("m0")), ["m0"])
    np.save(os.path.join(out, "shared_m0.npy"), shared["m0"])
    spark.stop()

    spark = session("local[1]")
    models = [treescore.Model.load(os.path.join(folder, "models", f)) for f in model_files]
    rows = spark.read.parquet(os.path.join(folder, "rows.parquet")).withColumn("key", F.col("id") % 3)
    single = collect(rows.select("id", *columns(models)), names)
    for name in names:
        np.save(os.path.join(out, f"single_{name}.npy"), single[name])
    spark.stop()

    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
