"""`treescore demo`: the end-to-end job, with nothing to download.

It generates a dataset, trains a LightGBM model, then scores the same Parquet data on local
Spark two ways: with treescore, and with the method the talk recommends (mapInPandas with
the model loaded once per partition). It checks that the two agree exactly and prints both
throughputs side by side.
"""
import os
import tempfile
import time

import numpy as np
from pyspark.sql import functions as F

from treescore.functions import score
from treescore.model import Model
from treescore.spark_session import command_session

TRAINING_ROWS = 50_000


def _dataset(rows: int, features: int, seed: int):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, features))
    x[rng.random(x.shape) < 0.01] = np.nan  # LightGBM's missing values, as real data has
    signal = np.nan_to_num(x)
    y = 3 * signal[:, 0] - signal[:, 1] ** 2 + np.sin(signal[:, 2] * 2) + 0.5 * signal[:, 3] * signal[:, 4]
    return x, y + rng.normal(scale=0.1, size=rows)


def _train(features: int, trees: int):
    import lightgbm as lgb

    x, y = _dataset(TRAINING_ROWS, features, seed=1)
    params = {"objective": "regression", "num_leaves": 63, "learning_rate": 0.1, "verbose": -1, "num_threads": 2}
    return lgb.train(params, lgb.Dataset(x, y, feature_name=[f"f{i}" for i in range(features)]), trees)


def _write_input(spark, path: str, rows: int, features: int) -> None:
    import pandas as pd

    x, _ = _dataset(rows, features, seed=2)
    frame = pd.DataFrame(x, columns=[f"f{i}" for i in range(features)])
    frame.insert(0, "id", np.arange(rows, dtype=np.int64))
    local = path + ".local.parquet"
    frame.to_parquet(local, index=False)
    spark.read.parquet(local).repartition(spark.sparkContext.defaultParallelism).write.parquet(path)


def _score_with_map_in_pandas(frame, model_text: str, feature_names):
    """The talk's recommended method: mapInPandas, the model loaded once per partition."""

    def predict(batches):
        import lightgbm as lgb

        booster = lgb.Booster(model_str=model_text)
        for batch in batches:
            yield batch[["id"]].assign(prediction=booster.predict(batch[feature_names].to_numpy(), num_threads=1))

    return frame.mapInPandas(predict, schema="id long, prediction double")


def _timed_write(frame, path: str) -> float:
    started = time.perf_counter()
    frame.write.mode("overwrite").parquet(path)
    return time.perf_counter() - started


def run_demo(rows: int, features: int, trees: int, master: str) -> int:
    print(f"treescore demo: {rows:,} rows x {features} features, a {trees}-tree LightGBM regressor")
    booster = _train(features, trees)
    spark = command_session("treescore demo", master)
    try:
        with tempfile.TemporaryDirectory(prefix="treescore-demo-") as work:
            data = os.path.join(work, "input.parquet")
            _write_input(spark, data, rows, features)
            frame = spark.read.parquet(data)
            model = Model.from_booster(booster)
            names = model.feature_names

            methods = {
                "treescore": lambda rows_in: rows_in.select("id", score(model).alias("prediction")),
                "mapInPandas + lightgbm": lambda rows_in: _score_with_map_in_pandas(rows_in, booster.model_to_string(),
                                                                                   names),
            }
            seconds = {}
            for name, build in methods.items():
                out = os.path.join(work, name.split()[0])
                # Warm-up on the first 1,000 rows (JIT, Python workers, model caches). A filter, not a
                # limit: a limit cuts the Python workers off mid-stream.
                _timed_write(build(frame.where(F.col("id") < 1000)), out)
                seconds[name] = _timed_write(build(frame), out)

            def predictions(folder: str) -> np.ndarray:
                return spark.read.parquet(os.path.join(work, folder)).orderBy("id").toPandas()["prediction"].to_numpy()

            ours, theirs = predictions("treescore"), predictions("mapInPandas")
            compared = min(len(ours), len(theirs))
            # Bit patterns, not ==: == (and Spark's !=) treats -0.0 as 0.0 and every NaN as equal.
            mismatches = int(np.count_nonzero(ours[:compared].view(np.uint64) != theirs[:compared].view(np.uint64)))

            print()
            print(f"{'method':<26}{'seconds':>10}{'rows/s':>16}{'vs mapInPandas':>18}")
            baseline = seconds["mapInPandas + lightgbm"]
            for name, secs in seconds.items():
                print(f"{name:<26}{secs:>10.2f}{rows / secs:>16,.0f}{baseline / secs:>17.2f}x")
            print()
            if compared == rows and mismatches == 0:
                print(f"outputs equal: all {rows:,} predictions are identical, bit for bit")
                return 0
            print(f"OUTPUTS DIFFER: {mismatches:,} of {compared:,} rows disagree")
            return 1
    finally:
        spark.stop()
