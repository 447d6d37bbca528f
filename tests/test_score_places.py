"""Every place a user may put a score in a query: each is batched and exact, or evaluated row at a
time and exact, and none fails with an internal error. Expected scores come from Booster.predict
over the very feature values Spark computed (an average, a window, an array element), collected
from the same query without the score."""
import numpy as np
import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F

import treescore
from conftest import FEATURE_NAMES, assert_same_bits, features, plan_of

ROWS = 3_000


@pytest.fixture(scope="module")
def frame(spark):
    x = features(ROWS, seed=61)
    rows = [(i, i % 5, ["a", "b", "c"][i % 3], *map(float, x[i])) for i in range(ROWS)]
    df = spark.createDataFrame(rows, ["id", "k", "p", *FEATURE_NAMES]).repartition(3).cache()
    df.createOrReplaceTempView("places")
    return df


@pytest.fixture(scope="module")
def model(spark, regression_booster):
    m = treescore.Model.from_booster(regression_booster)
    treescore.register(spark, "places_model", m)
    return m


def predicted(booster, df, order):
    """Booster.predict over the feature columns x0..x7 of df, in `order`."""
    pdf = df.orderBy(*order).toPandas()
    return booster.predict(pdf[FEATURE_NAMES].to_numpy(dtype=np.float64))


def scores(df, column, order):
    return df.orderBy(*order).toPandas()[column].to_numpy(dtype=np.float64)


def avgs():
    return [F.avg(c).alias(c) for c in FEATURE_NAMES]


def score_of_avgs(model):
    return treescore.score(model, *[F.avg(c) for c in FEATURE_NAMES])


def test_a_score_over_aggregate_results(frame, model, regression_booster):
    scored = frame.groupBy("k").agg(score_of_avgs(model).alias("s"), F.count("*").alias("n"))
    assert "BatchScore" in plan_of(scored)
    assert_same_bits(scores(scored, "s", ["k"]), predicted(regression_booster, frame.groupBy("k").agg(*avgs()), ["k"]))
    assert scores(scored, "n", ["k"]).sum() == ROWS


def test_a_score_over_aggregates_and_grouping_keys(frame, model, regression_booster):
    features = [F.col("k").cast("double")] + [F.max(c) for c in FEATURE_NAMES[1:]]
    scored = frame.groupBy("k").agg(treescore.score(model, *features).alias("s"))
    reference = frame.groupBy("k").agg(F.col("k").cast("double").alias("x0"),
                                       *[F.max(c).alias(c) for c in FEATURE_NAMES[1:]])
    assert_same_bits(scores(scored, "s", ["k"]), predicted(regression_booster, reference, ["k"]))


@pytest.mark.parametrize("grouping", ["rollup", "cube"])
def test_rollup_and_cube(frame, model, regression_booster, grouping):
    grouped = getattr(frame, grouping)("k", "p")
    scored = grouped.agg(score_of_avgs(model).alias("s"))
    reference = getattr(frame, grouping)("k", "p").agg(*avgs())
    order = [F.col("k").asc_nulls_first(), F.col("p").asc_nulls_first()]
    assert_same_bits(scores(scored, "s", order), predicted(regression_booster, reference, order))


def test_grouping_sets_in_sql(spark, frame, model, regression_booster):
    means = ", ".join(f"avg({c})" for c in FEATURE_NAMES)
    scored = spark.sql(f"SELECT k, p, treescore_score('places_model', {means}) AS s FROM places "
                       "GROUP BY GROUPING SETS ((k), (p), ())")
    reference = spark.sql(f"SELECT k, p, {', '.join(f'avg({c}) AS {c}' for c in FEATURE_NAMES)} FROM places "
                          "GROUP BY GROUPING SETS ((k), (p), ())")
    order = [F.col("k").asc_nulls_first(), F.col("p").asc_nulls_first()]
    assert_same_bits(scores(scored, "s", order), predicted(regression_booster, reference, order))


def test_pivot_over_a_summed_score(frame, model, regression_booster):
    scored = frame.groupBy("k").pivot("p", ["a", "b", "c"]).agg(F.sum(treescore.score(model)))
    assert "BatchScore" in plan_of(scored)
    pdf = frame.toPandas()
    pdf["s"] = regression_booster.predict(pdf[FEATURE_NAMES].to_numpy())
    result = scored.orderBy("k").toPandas()
    for p in ["a", "b", "c"]:
        # Spark's sum order is not NumPy's; the sum of exact scores agrees to rounding.
        expected = pdf[pdf.p == p].groupby("k")["s"].sum().sort_index().to_numpy()
        np.testing.assert_allclose(result[p].to_numpy(), expected, rtol=1e-12)
    # each exact: the per-row scores under the pivot
    assert_same_bits(scores(frame.select("id", treescore.score(model).alias("s")), "s", ["id"]),
                     regression_booster.predict(pdf.sort_values("id")[FEATURE_NAMES].to_numpy()))


def test_pivot_with_a_score_over_aggregates(frame, model, regression_booster):
    scored = frame.groupBy("k").pivot("p", ["a", "b"]).agg(score_of_avgs(model))
    result = scored.orderBy("k").toPandas()
    for p in ["a", "b"]:
        reference = frame.where(F.col("p") == p).groupBy("k").agg(*avgs())
        assert_same_bits(result[p].to_numpy(dtype=np.float64), predicted(regression_booster, reference, ["k"]))


def test_a_score_inside_a_window_functions_input(frame, model, regression_booster):
    w = Window.partitionBy("k").orderBy("id").rowsBetween(-2, 0)
    scored = frame.select("id", F.max(treescore.score(model)).over(w).alias("m"))
    assert "BatchScore" in plan_of(scored)
    pdf = frame.orderBy("id").toPandas()
    pdf["s"] = regression_booster.predict(pdf[FEATURE_NAMES].to_numpy())
    expected = pdf.groupby("k")["s"].transform(lambda s: s.rolling(3, min_periods=1).max()).to_numpy()
    assert_same_bits(scores(scored, "m", ["id"]), expected)


def test_a_score_over_window_results(frame, model, regression_booster):
    w = Window.partitionBy("k").orderBy("id").rowsBetween(-3, 3)
    windowed = [F.avg(c).over(w).alias(c) for c in FEATURE_NAMES]
    scored = frame.select("id", treescore.score(model, *[F.avg(c).over(w) for c in FEATURE_NAMES]).alias("s"))
    assert "BatchScore" in plan_of(scored)
    assert_same_bits(scores(scored, "s", ["id"]), predicted(regression_booster, frame.select("id", *windowed), ["id"]))


def test_explode_of_a_grid(frame, model, regression_booster):
    grid = treescore.score_grid(model, vary={"x1": [-1.0, 0.0, 2.5]})
    scored = frame.select("id", F.posexplode(grid).alias("point", "s"))
    assert "BatchScore" in plan_of(scored)
    result = scored.orderBy("id", "point").toPandas()
    x = frame.orderBy("id").toPandas()[FEATURE_NAMES].to_numpy()
    expected = []
    for row in x:
        for v in [-1.0, 0.0, 2.5]:
            point = row.copy()
            point[1] = v
            expected.append(point)
    assert_same_bits(result["s"].to_numpy(), regression_booster.predict(np.array(expected)))


def test_scalar_in_and_exists_subqueries(spark, frame, model, regression_booster):
    pdf = frame.orderBy("id").toPandas()
    s = regression_booster.predict(pdf[FEATURE_NAMES].to_numpy())
    call = "treescore_score('places_model')"
    top = spark.sql(f"SELECT (SELECT max({call}) FROM places) AS m").collect()[0].m
    assert np.float64(top).view(np.uint64) == s.max().view(np.uint64)
    ids = spark.sql(f"SELECT id FROM places WHERE id IN (SELECT id FROM places WHERE {call} > 1.0)")
    assert sorted(r.id for r in ids.collect()) == list(np.flatnonzero(s > 1.0))
    exists = spark.sql(f"SELECT count(*) AS n FROM places o WHERE EXISTS "
                       f"(SELECT 1 FROM places i WHERE i.k = o.k AND {call} > 3.0)").collect()[0].n
    keys_with_high = set(pdf.k[s > 3.0])
    assert exists == int(pdf.k.isin(keys_with_high).sum())


def test_correlated_subqueries(spark, frame, model, regression_booster):
    pdf = frame.orderBy("id").toPandas()
    s = regression_booster.predict(pdf[FEATURE_NAMES].to_numpy())
    call = "treescore_score('places_model', i.x0, i.x1, i.x2, i.x3, i.x4, i.x5, i.x6, i.x7)"
    per_key = spark.sql(f"SELECT o.k, (SELECT max({call}) FROM places i WHERE i.k = o.k) AS m "
                        "FROM (SELECT DISTINCT k FROM places) o ORDER BY o.k").toPandas()
    expected = [s[pdf.k.to_numpy() == k].max() for k in per_key.k]
    assert_same_bits(per_key.m.to_numpy(), np.array(expected))
    # A score over both the outer and the inner row, in a correlated predicate: Spark turns it into
    # a join condition over both sides, where it is evaluated row at a time.
    mixed = "treescore_score('places_model', o.x0, i.x1, o.x2, o.x3, o.x4, o.x5, o.x6, o.x7)"
    ids = spark.sql(f"SELECT o.id FROM places o WHERE EXISTS (SELECT 1 FROM places i WHERE i.id = o.id AND "
                    f"{mixed} > 1.0)").collect()
    assert sorted(r.id for r in ids) == list(np.flatnonzero(s > 1.0))


def test_ctes(spark, frame, model, regression_booster):
    scored = spark.sql("WITH scored AS (SELECT id, treescore_score('places_model') AS s FROM places) "
                       "SELECT id, s FROM scored WHERE s > 0.5")
    assert "BatchScore" in plan_of(scored)
    pdf = frame.orderBy("id").toPandas()
    s = regression_booster.predict(pdf[FEATURE_NAMES].to_numpy())
    assert_same_bits(scores(scored, "s", ["id"]), s[s > 0.5])


def test_insert_into_select_and_create_table_as_select(spark, frame, model, regression_booster, tmp_path):
    pdf = frame.orderBy("id").toPandas()
    expected = regression_booster.predict(pdf[FEATURE_NAMES].to_numpy())
    location = str(tmp_path / "ctas")
    spark.sql(f"CREATE TABLE places_ctas USING parquet LOCATION '{location}' AS "
              "SELECT id, treescore_score('places_model') AS s FROM places")
    try:
        spark.sql("INSERT INTO places_ctas SELECT id + 100000, treescore_score('places_model') FROM places")
        table = spark.table("places_ctas")
        assert_same_bits(scores(table.where("id < 100000"), "s", ["id"]), expected)
        assert_same_bits(scores(table.where("id >= 100000"), "s", ["id"]), expected)
    finally:
        spark.sql("DROP TABLE places_ctas")


def test_sort_keys_and_distinct(frame, model, regression_booster):
    pdf = frame.toPandas()
    s = regression_booster.predict(pdf[FEATURE_NAMES].to_numpy())
    ordered = frame.orderBy(treescore.score(model).desc()).select("id")
    assert "BatchScore" in plan_of(ordered)
    assert [r.id for r in ordered.limit(20).collect()] == list(pdf.id.to_numpy()[np.argsort(-s, kind="stable")][:20])
    distinct = frame.select(treescore.score(model, *[F.round(c, 0) for c in FEATURE_NAMES]).alias("s")).distinct()
    rounded = np.round(pdf[FEATURE_NAMES].to_numpy(), 0)
    expected = np.unique(regression_booster.predict(rounded).view(np.uint64))
    assert np.array_equal(np.sort(scores(distinct, "s", ["s"]).view(np.uint64)), expected)


def test_a_score_inside_lambdas(frame, model, regression_booster):
    offsets = F.array(F.lit(-1.0), F.lit(0.0), F.lit(1.5))
    rest = [F.col(c) for c in FEATURE_NAMES[1:]]
    scored = frame.select("id", F.transform(offsets, lambda v: treescore.score(model, F.col("x0") + v, *rest)).alias("t"),
                          F.aggregate(offsets, F.lit(0.0),
                                      lambda acc, v: acc + treescore.score(model, F.col("x0") + v, *rest)).alias("a"))
    result = scored.orderBy("id").toPandas()
    x = frame.orderBy("id").toPandas()[FEATURE_NAMES].to_numpy()
    per_offset = []
    for d in [-1.0, 0.0, 1.5]:
        shifted = x.copy()
        shifted[:, 0] = shifted[:, 0] + d
        per_offset.append(regression_booster.predict(shifted))
    assert_same_bits(np.stack(result["t"].to_numpy()), np.stack(per_offset, axis=1))
    assert_same_bits(result["a"].to_numpy(), ((0.0 + per_offset[0]) + per_offset[1]) + per_offset[2])
