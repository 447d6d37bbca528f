"""treescore's scores equal lightgbm.Booster.predict bit for bit, through the batched operator."""
import numpy as np
import pytest

import treescore
from conftest import FEATURE_NAMES, assert_same_bits, features, plan_of, write_parquet

ROWS = 120_000


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """120k rows with NaN, nulls, infinities, signed zeros and values near LightGBM's zero threshold."""
    x = features(ROWS, seed=11)
    rng = np.random.default_rng(12)
    null_mask = rng.random(x.shape) < 0.02
    x[:6, 0] = [np.inf, -np.inf, 0.0, -0.0, 1e-35, -1e-36]
    path = str(tmp_path_factory.mktemp("parity") / "rows.parquet")
    write_parquet(path, x, null_mask)
    return path, np.where(null_mask, np.nan, x)  # what lightgbm sees: nulls are NaN


@pytest.mark.parametrize("booster_name", ["regression_booster", "binary_booster"])
def test_scores_equal_lightgbm_predict_bit_for_bit(spark, dataset, booster_name, request):
    booster = request.getfixturevalue(booster_name)
    path, expected_input = dataset
    model = treescore.Model.from_booster(booster)
    scored = spark.read.parquet(path).select("id", treescore.score(model).alias("score"))
    result = scored.orderBy("id").toPandas()

    assert "BatchScore" in plan_of(scored)
    assert len(result) == ROWS
    expected = booster.predict(expected_input)
    actual = result["score"].to_numpy()
    assert actual.dtype == np.float64
    assert_same_bits(actual.view(np.int64), expected.view(np.int64))  # bitwise ==


def test_batched_and_row_at_a_time_paths_agree(spark, dataset, regression_booster):
    path, _ = dataset
    model = treescore.Model.from_booster(regression_booster)

    def run():
        df = spark.read.parquet(path).select("id", treescore.score(model).alias("score"))
        return df.orderBy("id").toPandas()["score"].to_numpy(), plan_of(df)

    batched, batched_plan = run()
    spark.conf.set("spark.treescore.batch.enabled", "false")
    try:
        fallback, fallback_plan = run()
    finally:
        spark.conf.unset("spark.treescore.batch.enabled")
    assert "BatchScore" in batched_plan
    assert "BatchScore" not in fallback_plan
    assert_same_bits(batched.view(np.int64), fallback.view(np.int64))


def test_parquet_columns_are_read_in_place_with_the_row_paths_bits(spark, dataset, regression_booster):
    """Parquet's vectorized reader hands batches to the operator: no ColumnarToRow in between."""
    path, expected_input = dataset
    model = treescore.Model.from_booster(regression_booster)

    def run():
        df = spark.read.parquet(path).select("id", treescore.score(model).alias("score"))
        scores = df.orderBy("id").toPandas()["score"].to_numpy()
        return scores, df._jdf.queryExecution().executedPlan().toString()

    columnar, columnar_plan = run()
    spark.conf.set("spark.treescore.columnar.enabled", "false")
    try:
        rows, row_plan = run()
    finally:
        spark.conf.unset("spark.treescore.columnar.enabled")
    assert ", columnar input" in columnar_plan and "ColumnarToRow" not in columnar_plan, columnar_plan
    assert ", columnar input" not in row_plan and "ColumnarToRow" in row_plan, row_plan
    assert_same_bits(columnar.view(np.int64), rows.view(np.int64))
    assert_same_bits(columnar.view(np.int64), regression_booster.predict(expected_input).view(np.int64))


def test_explain_shows_the_batched_operator(spark, dataset, regression_booster, capsys):
    path, _ = dataset
    model = treescore.Model.from_booster(regression_booster)
    spark.read.parquet(path).withColumn("y", treescore.score(model)).explain()
    assert "BatchScore [treescore_score(" in capsys.readouterr().out


def test_model_features_by_name_from_columns_in_any_order(spark, dataset, regression_booster):
    path, expected_input = dataset
    model = treescore.Model.from_booster(regression_booster)
    shuffled = spark.read.parquet(path).select("id", *reversed(FEATURE_NAMES))
    result = shuffled.withColumn("y", treescore.score(model)).orderBy("id").toPandas()
    assert_same_bits(result["y"].to_numpy(), regression_booster.predict(expected_input))
