"""Through Python: scores in filters, aggregates and joins, and clear errors for vector inputs."""
import numpy as np
import pytest
from pyspark.errors import AnalysisException
from pyspark.ml.feature import VectorAssembler
from pyspark.ml.linalg import Vectors
from pyspark.sql import functions as F

import treescore
from conftest import FEATURE_NAMES, assert_same_bits, feature_frame, plan_of


@pytest.fixture(scope="module")
def frame(spark, tmp_path_factory):
    return feature_frame(spark, tmp_path_factory.mktemp("places"), 8_000, seed=51)


def test_filter_aggregate_and_join(spark, frame, regression_booster, binary_booster):
    df, x = frame
    reg = treescore.Model.from_booster(regression_booster)
    binary = treescore.Model.from_booster(binary_booster)
    expected_reg = regression_booster.predict(x)
    expected_bin = binary_booster.predict(x)

    filtered = df.where(treescore.score(reg) > 1.0).select("id")
    assert "BatchScore" in plan_of(filtered)
    assert sorted(r.id for r in filtered.collect()) == list(np.flatnonzero(expected_reg > 1.0))

    def total():
        return df.agg(F.sum(treescore.score(binary)).alias("s"), F.count(F.lit(1)).alias("n"))

    batched = total()
    assert "BatchScore" in plan_of(batched)
    spark.conf.set("spark.treescore.batch.enabled", "false")
    try:
        row_at_a_time = total().collect()[0]  # the same rows summed in the same order, scored one by one
    finally:
        spark.conf.unset("spark.treescore.batch.enabled")
    assert batched.collect()[0] == row_at_a_time
    assert row_at_a_time.n == len(x)

    left = df.select("id", treescore.score(reg).alias("y"))
    right = df.select("id", treescore.score(binary).alias("p"))
    joined = left.join(right, "id").orderBy("id")
    assert plan_of(joined).count("BatchScore [") == 2
    result = joined.toPandas()
    assert_same_bits(result["y"].to_numpy(), expected_reg)
    assert_same_bits(result["p"].to_numpy(), expected_bin)


def test_a_vector_whose_declared_size_is_wrong_is_an_analysis_error(spark, frame, regression_booster):
    df, _ = frame
    assembled = VectorAssembler(inputCols=FEATURE_NAMES[:3], outputCol="v").transform(df.na.fill(0.0))
    model = treescore.Model.from_booster(regression_booster)
    with pytest.raises(AnalysisException) as error:
        assembled.select(treescore.score(model, "v"))
    assert "the vector column v holds 3 features but the model expects 8" in str(error.value)


def test_a_vector_of_the_wrong_length_at_run_time_names_both_lengths(spark, regression_booster):
    rows = [(i, Vectors.dense([0.5] * (8 if i != 7 else 5))) for i in range(20)]
    df = spark.createDataFrame(rows, ["id", "v"]).repartition(2)
    model = treescore.Model.from_booster(regression_booster)
    with pytest.raises(Exception) as error:
        df.select(treescore.score(model, "v")).collect()
    assert "a row's feature vector has 5 values but the model expects 8" in str(error.value)
    assert df.where("id != 7").select(treescore.score(model, "v")).count() == 19  # the JVM is fine afterwards


def test_unknown_kind_is_a_value_error(spark, regression_booster):
    model = treescore.Model.from_booster(regression_booster)
    with pytest.raises(ValueError, match="unknown score kind 'proba'; expected one of prediction, raw, leaf, contrib"):
        treescore.score(model, kind="proba")


def test_a_model_the_executors_cache_cannot_hold_is_an_analysis_error(spark, frame, regression_booster):
    df, _ = frame
    model = treescore.Model.from_booster(regression_booster)
    cache = spark._jvm.treescore.nativelib.ModelCache
    cache.setMaxBytesForTesting(100 << 10)
    try:
        with pytest.raises(AnalysisException) as error:
            df.select(treescore.score(model))  # analysis, on the driver: no job runs
    finally:
        cache.setMaxBytesForTesting(getattr(getattr(spark._jvm.scala, "None$"), "MODULE$"))  # the conf's budget again
    message = str(error.value)
    assert f"model {model.content_hash[:12]} (all iterations, " in message, message
    assert "more than the model cache's budget of 100 KiB (spark.treescore.cache.maxBytes=100 KiB)" in message, message
    assert "Raise spark.executor.memoryOverhead" in message, message
    assert df.select(treescore.score(model)).count() == df.count()  # the budget restored, it fits
