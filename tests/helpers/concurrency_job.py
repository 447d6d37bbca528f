"""Child process of test_concurrency.py: scores the same rows in three Spark sessions, one after
another in one JVM, and saves every score column as .npy for the test to compare.

A child process, because a Python process can hold one SparkContext at a time and the test
session's own is local[2]. The sessions, in order:

- `evicting`: local[8], three queries at once from three driver threads, each over 64 partitions
  with its own nine models: six score columns and a route over three more. The cache's budget
  holds one query's models loaded and the reserve of a load, so tasks wait for room, and loads and
  evictions run while other tasks score.
- `shared`: local[8], the default budget, one model over 64 partitions: eight tasks at a time
  share one native model.
- `single`: local[1], the reference: one task at a time, each query in turn.

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


def session(master: str) -> SparkSession:
    builder = (
        SparkSession.builder.master(master)
        .appName(f"treescore-concurrency-{master}")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.treescore.batch.rows", "512")  # many batches per task
    )
    spark = treescore.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def model_groups(folder, model_files):
    """The models in groups of nine, one group per query (model files are numbered in order)."""
    paths = sorted(model_files, key=lambda f: int(f.removeprefix("model").removesuffix(".txt")))
    models = [treescore.Model.load(os.path.join(folder, "models", f)) for f in paths]
    return [models[i:i + 9] for i in range(0, len(models), 9)]


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

    spark = session("local[8]")
    jvm = spark.sparkContext._jvm
    cache = jvm.treescore.nativelib.ModelCache
    report["live_models_before"] = jvm.treescore.nativelib.NativeMethods.liveModelCount()
    groups = model_groups(folder, model_files)
    rows = spark.read.parquet(os.path.join(folder, "rows.parquet")).withColumn("key", F.col("id") % 3)
    # A budget that holds one query's models: what its nine hold once loaded (each group scored
    # once on a few rows, nothing evicted yet) and room to load the largest of them beside those.
    # The models are freed again before the queries, which then load and evict while they score.
    budget = 0
    for group in groups:
        before = cache.loadedBytes()
        rows.limit(16).select(*columns(group)).collect()
        held = cache.loadedBytes() - before
        most_reserve = max(cache.loadReserve(m._java_model, jvm.treescore.model.IterationRange.All()) for m in group)
        budget = max(budget, held + most_reserve)
    cache.clear()
    report["budget"] = budget
    cache.setMaxBytesForTesting(report["budget"])
    report["evictions_before"] = cache.evictions()
    queries = [rows.repartition(PARTITIONS).select("id", *columns(group)) for group in groups]
    with ThreadPoolExecutor(len(groups)) as pool:  # three jobs at once, each with its own models
        results = list(pool.map(lambda query: collect(query, names), queries))
    for n, result in enumerate(results):
        for name in names:
            np.save(os.path.join(out, f"evicting{n}_{name}.npy"), result[name])
    report["evictions_after"] = cache.evictions()
    report["cached_after"] = cache.loadedCount()
    report["cached_bytes_after"] = cache.loadedBytes()
    report["live_models_after"] = jvm.treescore.nativelib.NativeMethods.liveModelCount()
    spark.stop()

    spark = session("local[8]")
    first = model_groups(folder, model_files)[0][0]
    rows = spark.read.parquet(os.path.join(folder, "rows.parquet"))
    shared = collect(rows.repartition(PARTITIONS).select("id", treescore.score(first).alias("m0")), ["m0"])
    np.save(os.path.join(out, "shared_m0.npy"), shared["m0"])
    spark.stop()

    spark = session("local[1]")
    rows = spark.read.parquet(os.path.join(folder, "rows.parquet")).withColumn("key", F.col("id") % 3)
    for n, group in enumerate(model_groups(folder, model_files)):
        single = collect(rows.select("id", *columns(group)), names)
        for name in names:
            np.save(os.path.join(out, f"single{n}_{name}.npy"), single[name])
    spark.stop()

    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
