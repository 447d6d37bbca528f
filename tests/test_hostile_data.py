"""Unusual data: empty frames and frames with no partitions, 10,000 features (as columns and as a
vector), and one bad vector among a million rows. (NaN, infinities and nulls:
test_parity_matrix.py.)"""
import time

import lightgbm as lgb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from py4j.protocol import Py4JJavaError
from pyspark.ml.functions import array_to_vector
from pyspark.ml.linalg import Vectors
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, LongType, StructField, StructType

import treescore
from conftest import assert_same_bits, plan_of


def fit(x, rounds=6, seed=1):
    names = [f"f{j}" for j in range(x.shape[1])]
    y = np.nan_to_num(x[:, 0]) * 2 - np.nan_to_num(x[:, 1]) + seed
    params = {"objective": "regression", "num_leaves": 7, "verbose": -1, "num_threads": 1, "seed": seed}
    return lgb.train(params, lgb.Dataset(x, y, feature_name=names), rounds)


def test_empty_frames_and_zero_partitions_score_nothing_and_load_nothing(spark):
    # A model of its own (new seed), so the live count shows whether any task loaded it.
    booster = fit(np.random.default_rng(20).normal(size=(500, 3)), seed=20)
    model = treescore.Model.from_booster(booster)
    live = spark.sparkContext._jvm.treescore.nativelib.NativeMethods.liveModelCount
    before = live()
    schema = StructType([StructField("id", LongType())] + [StructField(f"f{j}", DoubleType()) for j in range(3)])
    frames = {
        "no rows": spark.createDataFrame([], schema),
        "no partitions": spark.createDataFrame(spark.sparkContext.emptyRDD(), schema),
        "limit 0 (Spark drops the plan)": spark.range(1000).select("id", *[(F.col("id") * (j + 1)).cast("double").alias(f"f{j}")
                                                    for j in range(3)]).limit(0),
        "every row filtered": spark.range(1000).select("id", *[F.rand(j).alias(f"f{j}") for j in range(3)])
        .where("f0 > 2").repartition(8),
    }
    assert frames["no partitions"].rdd.getNumPartitions() == 0
    for name, df in frames.items():
        scored = df.select("id", treescore.score(model).alias("s"))
        assert ("BatchScore" in plan_of(scored)) == ("drops the plan" not in name), name
        assert scored.collect() == [], name
        assert scored.count() == 0, name
        assert scored.agg(F.sum("s")).collect()[0][0] is None, name
    assert live() == before, "no task with no rows loaded the model"


@pytest.fixture(scope="module")
def wide():
    rng = np.random.default_rng(21)
    x = rng.normal(size=(600, 10_000))
    x[rng.random(x.shape) < 0.01] = np.nan
    y = np.nan_to_num(x[:, 0]) + np.nan_to_num(x[:, 9_999]) * np.nan_to_num(x[:, 5_000])
    params = {"objective": "regression", "num_leaves": 7, "verbose": -1, "num_threads": 1, "seed": 2,
              "min_data_in_leaf": 5, "feature_fraction": 0.5}
    booster = lgb.train(params, lgb.Dataset(x, y, feature_name=[f"f{j}" for j in range(10_000)]), 8)
    return booster, x


@pytest.mark.slow
def test_ten_thousand_feature_columns(spark, tmp_path, wide):
    booster, x = wide
    model = treescore.Model.from_booster(booster)
    assert model.num_features == 10_000
    table = {"id": pa.array(np.arange(len(x), dtype=np.int64))}
    table.update({f"f{j}": pa.array(x[:, j]) for j in range(10_000)})
    path = str(tmp_path / "wide.parquet")
    pq.write_table(pa.table(table), path)
    # Spark's whole-stage code generation over 10,000 columns takes longer than everything else
    # here (38 s against 19 s without it, measured); treescore's operator runs the same either way.
    spark.conf.set("spark.sql.codegen.wholeStage", "false")
    try:
        started = time.monotonic()
        scored = spark.read.parquet(path).select("id", treescore.score(model).alias("s"))
        assert "BatchScore" in plan_of(scored)
        values = scored.orderBy("id").toPandas()["s"].to_numpy()
        print(f"10,000 feature columns: {time.monotonic() - started:.1f} s")
    finally:
        spark.conf.unset("spark.sql.codegen.wholeStage")
    assert_same_bits(values, booster.predict(x))


@pytest.mark.slow
def test_ten_thousand_features_in_a_vector(spark, wide):
    booster, x = wide
    model = treescore.Model.from_booster(booster)
    df = spark.createDataFrame([(i, Vectors.dense(row)) for i, row in enumerate(x)], ["id", "features"])
    values = df.select("id", treescore.score(model, "features").alias("s")).orderBy("id").toPandas()["s"]
    assert_same_bits(values.to_numpy(), booster.predict(x))


@pytest.mark.slow
def test_one_wrong_vector_in_a_million_rows_fails_the_job_naming_both_lengths(spark):
    booster = fit(np.random.default_rng(22).normal(size=(2_000, 6)), seed=22)
    model = treescore.Model.from_booster(booster)
    ids = spark.range(1_000_000, numPartitions=4)
    values = [F.sin(F.col("id") * (j + 1)) for j in range(6)]
    good = F.array(*values)
    bad_row = 654_321
    vectors = ids.select("id", array_to_vector(F.when(F.col("id") == bad_row, F.array(*values[:5]))
                                               .otherwise(good)).alias("features"))
    with pytest.raises(Py4JJavaError) as error:
        vectors.select(treescore.score(model, "features").alias("s")).agg(F.sum("s")).collect()
    message = str(error.value)
    assert "SparkException" in message, message[:2000]
    assert "treescore: a row's feature vector has 5 values but the model expects 6" in message, message[:2000]

    # The JVM lives on: the same session scores the other 999,999 rows.
    rest = vectors.where(F.col("id") != bad_row).select(treescore.score(model, "features").alias("s"))
    assert rest.count() == 999_999
    sample = ids.where(F.col("id") < 1000).select("id", *[v.alias(f"f{j}") for j, v in enumerate(values)])
    pdf = sample.select("id", treescore.score(model).alias("s"), *[f"f{j}" for j in range(6)]).orderBy("id").toPandas()
    assert_same_bits(pdf["s"].to_numpy(), booster.predict(pdf[[f"f{j}" for j in range(6)]].to_numpy()))
