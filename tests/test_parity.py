"""treescore's scores equal lightgbm.Booster.predict bit for bit, through the batched operator."""
import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import treescore
from conftest import FEATURE_NAMES, assert_same_bits, batch_score_inputs, features, plan_of, write_parquet

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


@pytest.fixture(scope="module")
def columnar_sources(spark, dataset, tmp_path_factory):
    """The parity rows as every columnar source: Parquet, ORC, the columnar cache, and Parquet
    300 columns wide (past spark.sql.codegen.maxFields, where Spark's own scans return rows)."""
    from pyspark.sql import functions as F

    path, _ = dataset
    folder = tmp_path_factory.mktemp("columnar")
    orc = str(folder / "rows.orc")
    spark.read.parquet(path).write.orc(orc)
    wide = str(folder / "wide.parquet")
    # Padded by pyarrow: Spark's writer took 24 s of each line's run over the 300-column projection.
    table = pq.read_table(path)
    for i in range(300 - table.num_columns):
        table = table.append_column(f"pad{i}", pc.multiply(table.column("x0"), float(i)))
    pq.write_table(table, wide, row_group_size=20_000)
    # Spark reuses a cached plan for every query with the same plan: cache one no other test reads.
    cached = spark.read.parquet(path).where(F.col("id") >= 0).cache()
    cached.count()
    yield {"parquet": lambda: spark.read.parquet(path), "orc": lambda: spark.read.orc(orc),
           "cache": lambda: cached, "parquet, 300 columns": lambda: spark.read.parquet(wide)}
    cached.unpersist()


@pytest.mark.parametrize("source", ["parquet", "orc", "cache", "parquet, 300 columns"])
def test_columnar_sources_are_read_as_columns_with_lightgbms_bits(spark, dataset, columnar_sources, source,
                                                                    regression_booster, engine):
    """A scan that produces column vectors hands them to the operator: no ColumnarToRow in
    between, and the scores of Booster.predict, on both engines."""
    _, expected_input = dataset
    model = treescore.Model.from_booster(regression_booster)
    ordered = columnar_sources[source]().select("id", treescore.score(model).alias("score")).orderBy("id")
    scores = ordered.toPandas()["score"].to_numpy()
    inputs = batch_score_inputs(ordered)  # the plan that ran: with adaptive execution, only it is final
    assert len(inputs) == 1 and inputs[0][0] == "column vectors" and inputs[0][1] != "ColumnarToRow", inputs
    assert_same_bits(scores.view(np.int64), regression_booster.predict(expected_input).view(np.int64))


def test_off_heap_vectors_give_the_row_paths_bits(spark, dataset, regression_booster):
    """Off-heap column vectors (spark.sql.columnVector.offheap.enabled) with nulls in every
    column: the row path's and lightgbm's bits. (ColumnarInputSuite checks that columns without
    nulls are read in place.)"""
    path, expected_input = dataset
    model = treescore.Model.from_booster(regression_booster)

    def run():
        ordered = spark.read.parquet(path).select("id", treescore.score(model).alias("score")).orderBy("id")
        scores = ordered.toPandas()["score"].to_numpy()
        return scores, batch_score_inputs(ordered)

    spark.conf.set("spark.sql.columnVector.offheap.enabled", "true")
    try:
        columnar, columnar_inputs = run()
        spark.conf.set("spark.treescore.columnar.enabled", "false")
        rows, row_inputs = run()
    finally:
        spark.conf.unset("spark.treescore.columnar.enabled")
        spark.conf.unset("spark.sql.columnVector.offheap.enabled")
    assert columnar_inputs == [("column vectors", "Scan parquet ")], columnar_inputs
    assert [path for path, _ in row_inputs] == ["rows"], row_inputs
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
