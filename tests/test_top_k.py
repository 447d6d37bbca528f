"""Top-K queries: ORDER BY score LIMIT k and rank() <= k per group give, with treescore's top-K
selection, exactly the rows and score bits of a full score followed by a sort (and of
lightgbm's own predict); the plan says so, the operator drops rows unscored, and the
treescore.top_k helper, exact and approximate, builds those queries."""
import math
import re

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F

import treescore
from conftest import FEATURE_NAMES, assert_same_bits, batch_score_nodes, feature_frame, features, market_frame, plan_of
from test_model_shapes import NUMERIC, SHAPES, SINGLE_OUTPUT_SHAPES, scoring_rows
from test_model_shapes import linear_booster, make_rows, train as shape_booster
from test_ensembles import transformed, weighted


def batch_score_metrics(df) -> dict:
    """The metrics of df's BatchScore nodes (after it ran), summed by name."""
    found = {}
    for node in batch_score_nodes(df):
        metrics = node.metrics().iterator()
        while metrics.hasNext():
            entry = metrics.next()
            found[entry._1()] = found.get(entry._1(), 0) + entry._2().value()
    return found


def selects(df, k: int, direction: str = "descending", per_group: bool = False) -> bool:
    """Whether df's plan has a BatchScore selecting the top k by a score (explain's wording)."""
    pattern = rf"top {k} by treescore_score#\d+ {direction}" + (" per " if per_group else "(,|$|\n)")
    return re.search(pattern, plan_of(df)) is not None


@pytest.fixture
def full_scoring(spark):
    """Runs a block with top-K selection off (every row scored, then Spark sorts), then restores it."""
    class Off:
        def __enter__(self):
            spark.conf.set("spark.treescore.topK.enabled", "false")

        def __exit__(self, *exc):
            spark.conf.unset("spark.treescore.topK.enabled")
    return Off()


def rows_of(df, key="id"):
    """id -> score of every row of df."""
    return {int(r[key]): r["s"] for r in df.collect()}


def ranked_keys(expected: np.ndarray, k: int, descending: bool, among):
    """The ids considered (`among`, default all), their keys (larger is better) and the k-th best key."""
    among = np.arange(len(expected)) if among is None else np.asarray(among)
    keys = expected[among] if descending else -expected[among]
    return among, keys, np.sort(keys)[::-1][min(k, len(among)) - 1]


def assert_top(got: dict, expected: np.ndarray, k: int, descending: bool = True, among=None) -> None:
    """`got` (id -> score) is a top k of `expected` (scores by id, over the ids `among`): k rows
    (or all), every row strictly better than the k-th in it, none worse, scores bit for bit.
    Tree models give many rows the same score, and a LIMIT breaks ties as the sort meets them."""
    among, keys, bar = ranked_keys(expected, k, descending, among)
    assert len(got) == min(k, len(among))
    assert set(among[keys > bar].tolist()) <= set(got), "a row better than the k-th is missing"
    inside = {int(i): key for i, key in zip(among, keys)}
    assert all(i in inside and inside[i] >= bar for i in got), "a row worse than the k-th is in"
    ids = sorted(got)
    assert_same_bits([got[i] for i in ids], expected[ids], "top-K scores")


def top_with_ties(expected: np.ndarray, k: int, descending: bool = True, among=None) -> set:
    """The rows rank() <= k keeps: every row at least as good as the k-th."""
    among, keys, bar = ranked_keys(expected, k, descending, among)
    return set(among[keys >= bar].tolist())


@pytest.mark.parametrize("descending", [True, False])
@pytest.mark.parametrize("kind", ["prediction", "raw"])
def test_order_by_score_limit_k_equals_a_full_sort_bit_for_bit(spark, tmp_path, binary_booster, descending, kind,
                                                               full_scoring):
    df, x = feature_frame(spark, tmp_path, 60_000, seed=21)
    model = treescore.Model.from_booster(binary_booster)
    order = F.desc("s") if descending else F.asc("s")
    query = df.select("id", treescore.score(model, kind=kind).alias("s")).orderBy(order).limit(25)
    assert selects(query, 25, "descending" if descending else "ascending")
    got = rows_of(query)
    expected = binary_booster.predict(x, raw_score=(kind == "raw"))
    assert_top(got, expected, 25, descending)
    assert batch_score_metrics(query)["topKRowsDropped"] > 50_000
    with full_scoring:
        plain = df.select("id", treescore.score(model, kind=kind).alias("s")).orderBy(order).limit(25)
        assert "top 25 by" not in plan_of(plain)
        assert_top(rows_of(plain), expected, 25, descending)


def test_selection_skips_most_trees_and_the_rows_it_drops(spark, tmp_path, regression_booster):
    df, _ = feature_frame(spark, tmp_path, 50_000, seed=22)
    query = df.select("id", treescore.score(treescore.Model.from_booster(regression_booster)).alias("s")) \
        .orderBy(F.desc("s")).limit(10)
    query.collect()
    metrics = batch_score_metrics(query)
    assert metrics["topKTreesInFull"] == 50_000 * regression_booster.num_trees()
    assert 0 < metrics["topKTreesEvaluated"] < metrics["topKTreesInFull"] / 2
    assert metrics["topKRowsDropped"] > 49_000


def test_many_partitions_share_their_best_scores_and_stay_exact(spark, tmp_path, regression_booster, full_scoring):
    df, x = feature_frame(spark, tmp_path, 40_000, seed=23)
    df = df.repartition(16)
    model = treescore.Model.from_booster(regression_booster)
    query = df.select("id", treescore.score(model).alias("s")).orderBy(F.desc("s")).limit(7)
    assert_top(rows_of(query), regression_booster.predict(x), 7)


@pytest.mark.parametrize("rank", [F.rank, F.row_number])
def test_rank_per_group_equals_a_full_window_bit_for_bit(spark, tmp_path, regression_booster, rank, full_scoring):
    df, x, markets = market_frame(spark, tmp_path, 30_000, seed=24)
    model = treescore.Model.from_booster(regression_booster)

    def query():
        scored = df.select("id", "market", treescore.score(model).alias("s"))
        ranked = scored.withColumn("r", rank().over(Window.partitionBy("market").orderBy(F.desc("s"))))
        return ranked.where(F.col("r") <= 4)

    selected = query()
    assert selects(selected, 4, per_group=True)
    got = rows_of(selected)
    expected = regression_booster.predict(x)
    for market in ("DE", "FR", "IT"):
        rows = np.flatnonzero(markets == market)
        mine = {i: v for i, v in got.items() if markets[i] == market}
        if rank is F.rank:
            assert set(mine) == top_with_ties(expected, 4, among=rows)
            assert_same_bits([mine[i] for i in sorted(mine)], expected[sorted(mine)])
        else:
            assert_top(mine, expected, 4, among=rows)
    assert batch_score_metrics(selected)["topKRowsDropped"] > 25_000
    with full_scoring:
        plain = rows_of(query())
        if rank is F.rank:
            assert plain.keys() == got.keys()


def test_ties_with_the_kth_row_are_all_kept(spark, regression_booster):
    # 300 copies of one row among 2,000 others: per group, rank() <= 3 keeps every copy if the
    # copies are the best, and a LIMIT keeps k of them.
    x = features(2_000, seed=25)
    best = int(np.argmax(regression_booster.predict(x)))
    x = np.vstack([x, np.repeat(x[best:best + 1], 300, axis=0)])
    pdf = {name: x[:, j].tolist() for j, name in enumerate(FEATURE_NAMES)}
    rows = [dict(id=i, g=0, **{n: pdf[n][i] for n in FEATURE_NAMES}) for i in range(len(x))]
    df = spark.createDataFrame(rows)
    model = treescore.Model.from_booster(regression_booster)
    scored = df.select("id", "g", treescore.score(model, *FEATURE_NAMES).alias("s"))
    ranked = scored.withColumn("r", F.rank().over(Window.partitionBy("g").orderBy(F.desc("s")))).where("r <= 3")
    assert selects(ranked, 3, per_group=True)
    got = rows_of(ranked)
    assert set(got) == {best} | set(range(2_000, 2_300))
    limited = scored.orderBy(F.desc("s")).limit(3).collect()
    assert len(limited) == 3
    assert_same_bits([r["s"] for r in limited], [got[best]] * 3)


def test_hostile_values_and_saturated_probabilities(spark, binary_booster, full_scoring):
    # NaN, +-inf, +-0 and huge values, and rows the sigmoid maps to exactly 1.0 or 0.0: many ties.
    rng = np.random.default_rng(26)
    x = rng.normal(size=(4_000, len(FEATURE_NAMES))) * rng.choice([1, 1e3, 1e300], size=(4_000, 1))
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0])
    mask = rng.random(x.shape) < 0.15
    x[mask] = rng.choice(specials, size=mask.sum())
    rows = [dict(id=i, **{n: float(x[i, j]) for j, n in enumerate(FEATURE_NAMES)}) for i in range(len(x))]
    df = spark.createDataFrame(rows)
    model = treescore.Model.from_booster(binary_booster)
    expected = binary_booster.predict(x)
    for descending in (True, False):
        order = F.desc("s") if descending else F.asc("s")
        query = df.select("id", treescore.score(model, *FEATURE_NAMES).alias("s")).orderBy(order).limit(40)
        assert_top(rows_of(query), expected, 40, descending)
        ranked = df.select("id", treescore.score(model, *FEATURE_NAMES).alias("s")) \
            .withColumn("r", F.rank().over(Window.orderBy(order))).where("r <= 40")
        assert set(rows_of(ranked)) == top_with_ties(expected, 40, descending)


def hostile_frame(spark, tmp_path, x: np.ndarray, names):
    """x's rows as a DataFrame with an "id" and a group "g" (id % 3), read back from Parquet: a
    local relation would be scored while planning."""
    frame = pd.DataFrame(x, columns=names)
    frame.insert(0, "id", np.arange(len(x)))
    frame.to_parquet(tmp_path / "rows.parquet")
    return spark.read.parquet(str(tmp_path / "rows.parquet")).withColumn("g", F.col("id") % 3)


def assert_queries_exact(df, scorer, expected: np.ndarray, full_scoring, limit: int, per_group: int, name="",
                         drops: bool = False) -> None:
    """ORDER BY score LIMIT `limit` both ways and rank() <= `per_group` per group "g" are
    selected and keep the rows and bits of `expected` (by id), as the same queries with
    selection off do; with `drops`, the grouped query drops rows before their last tree."""
    for descending in (True, False):
        order = F.desc("s") if descending else F.asc("s")
        query = df.select("id", treescore.score(scorer).alias("s")).orderBy(order).limit(limit)
        assert selects(query, limit, "descending" if descending else "ascending"), name
        assert_top(rows_of(query), expected, limit, descending)
    ranked = df.select("id", "g", treescore.score(scorer).alias("s")) \
        .withColumn("r", F.rank().over(Window.partitionBy("g").orderBy(F.desc("s")))).where(f"r <= {per_group}")
    assert selects(ranked, per_group, per_group=True), name
    got = rows_of(ranked)
    groups = np.arange(len(expected)) % 3
    for g in range(3):
        want = top_with_ties(expected, per_group, among=np.flatnonzero(groups == g))
        assert {i for i in got if groups[i] == g} == want, name
    assert_same_bits([got[i] for i in sorted(got)], expected[sorted(got)], name)
    if drops:
        assert batch_score_metrics(ranked)["topKRowsDropped"] > 0, name
    with full_scoring:
        assert rows_of(ranked).keys() == got.keys()


@pytest.mark.parametrize("name", SINGLE_OUTPUT_SHAPES)
def test_every_objective_and_boosting_on_hostile_values(spark, tmp_path, name, full_scoring):
    """Each single-output shape of test_model_shapes (every objective, rf, dart, goss, deep trees,
    categoricals of 40 to 1,000 codes) over that test's rows: NaN, +-0, +-inf, tiny and huge
    values, every threshold and one ulp either side, odd codes; LIMIT both ways and rank() per
    group, against Booster.predict and against the same queries with selection off."""
    booster = shape_booster(name)
    categories = SHAPES[name][1]
    x = scoring_rows(booster, categories)
    df = hostile_frame(spark, tmp_path, x, NUMERIC + (["cat"] if categories else []))
    assert_queries_exact(df, treescore.Model.from_booster(booster), booster.predict(x), full_scoring, 30, 5, name)


# combine, transforms, members as (shape, weight, raw): shapes of test_model_shapes, so every
# objective family, rf, dart, goss, deep trees and a categorical of 200 codes take part.
ENSEMBLES = [
    ("mean", [], [("poisson", 0.5, False), ("binary", 0.3, False), ("rf", 0.2, False)]),
    ("sum", ["expm1", ("clip", 0, None)], [("regression", 0.6, False), ("dart", 0.0, True), ("goss", 0.4, False)]),
    ("min", [], [("huber", 1.0, False), ("binary_sigmoid_0.7", 2.0, True), ("255_leaves_deep", 0.5, False)]),
    ("max", ["sigmoid"], [("gamma", 1.0, False), ("cross_entropy", 3.0, False), ("quantile", 0.1, False)]),
    ("median", [], [("tweedie", 1.0, False), ("lambdarank", 1.0, True), ("monotone", 1.0, False)]),
    ("mean", ["exp"], [("categorical_200", 0.7, False), ("categorical_200", 0.3, True)]),
]


def ensemble_reference(boosters, members, x, combine, transforms) -> np.ndarray:
    """The ensemble's scores by the documented order of operations, from Booster.predict."""
    outputs = [b.predict(x, raw_score=raw) for b, (_, _, raw) in zip(boosters, members)]
    return transformed(weighted(outputs, [w for _, w, _ in members], combine), transforms)


@pytest.mark.parametrize("combine,transforms,members", ENSEMBLES, ids=[f"{c}-{len(m)}" for c, _, m in ENSEMBLES])
def test_ensembles_of_models_are_selected_and_exact_on_hostile_values(spark, tmp_path, combine, transforms, members,
                                                                      full_scoring):
    """An ensemble of models with weights of 0 or more (a zero among them), under every combine
    rule and transform, members scoring predictions or raw margins, over each member's hostile
    rows (NaN, +-0, +-inf, thresholds one ulp either side, odd codes): LIMIT both ways and rank()
    per group keep the rows and bits the documented order of operations gives."""
    boosters = [shape_booster(name) for name, _, _ in members]
    categories = SHAPES[members[0][0]][1]
    x = np.vstack([scoring_rows(b, categories) for b in boosters])
    df = hostile_frame(spark, tmp_path, x, NUMERIC + (["cat"] if categories else []))
    ensemble = treescore.Ensemble([treescore.Member(treescore.Model.from_booster(b), raw=raw)
                                   for b, (_, _, raw) in zip(boosters, members)],
                                  weights=[w for _, w, _ in members], combine=combine, transform=transforms or None)
    expected = ensemble_reference(boosters, members, x, combine, transforms)
    assert_queries_exact(df, ensemble, expected, full_scoring, 30, 5, combine, drops=True)


def test_nested_ensembles_are_selected_and_exact_on_hostile_values(spark, tmp_path, full_scoring):
    """An ensemble whose members include ensembles (weights of 0 or more, transforms at both
    levels, a model in two of them) is bounded through its inner ensembles: LIMIT both ways and
    rank() per group keep the rows and bits of the nested order of operations."""
    names = ["binary", "rf", "regression", "dart"]
    boosters = {name: shape_booster(name) for name in names}
    x = np.vstack([scoring_rows(boosters[name], 0) for name in names])
    df = hostile_frame(spark, tmp_path, x, NUMERIC)
    models = {name: treescore.Model.from_booster(b) for name, b in boosters.items()}
    inner = treescore.Ensemble([models["binary"], models["rf"]], weights=[0.6, 0.4], combine="mean", transform="sigmoid")
    middle = treescore.Ensemble([inner, treescore.Member(models["regression"], raw=True)], weights=[2.0, 0.5],
                                combine="max")
    outer = treescore.Ensemble([middle, models["dart"], models["binary"]], weights=[1.0, 0.3, 0.0], combine="sum",
                               transform="expm1")
    out = {name: b.predict(x) for name, b in boosters.items()}
    inner_scores = transformed(weighted([out["binary"], out["rf"]], [0.6, 0.4], "mean"), ["sigmoid"])
    middle_scores = weighted([inner_scores, boosters["regression"].predict(x, raw_score=True)], [2.0, 0.5], "max")
    expected = transformed(weighted([middle_scores, out["dart"], out["binary"]], [1.0, 0.3, 0.0], "sum"), ["expm1"])
    assert_queries_exact(df, outer, expected, full_scoring, 25, 4, drops=True)
    negative_inside = treescore.Ensemble([treescore.Ensemble([models["rf"], models["dart"]], weights=[1.0, -1.0], combine="sum"),
                                          models["binary"]])
    query = df.select("id", treescore.score(negative_inside).alias("s")).orderBy(F.desc("s")).limit(5)
    assert "top 5 by" not in plan_of(query)


def test_routes_are_selected_and_exact_on_hostile_values(spark, tmp_path, full_scoring):
    """A route by market to a model, an ensemble and a default model, alone and inside an
    ensemble: each row is bounded (and scored) by the scorer its key picks, so LIMIT both ways
    and rank() per market keep the rows and bits of a full score. A route that scores null for
    a key keeps those rows, where a full sort puts them (first when ascending)."""
    names = ["regression", "binary", "dart", "goss"]
    boosters = {name: shape_booster(name) for name in names}
    x = np.vstack([scoring_rows(boosters[name], 0) for name in names])
    markets = ["DE", "FR", "IT"]
    df = hostile_frame(spark, tmp_path, x, NUMERIC) \
        .withColumn("market", F.element_at(F.array(*[F.lit(m) for m in markets]), (F.col("g") + 1).cast("int")))
    models = {name: treescore.Model.from_booster(b) for name, b in boosters.items()}
    blend = treescore.Ensemble([models["binary"], treescore.Member(models["dart"], raw=True)], weights=[0.5, 0.5],
                               combine="sum")
    route = treescore.Routed("market", {"DE": models["regression"], "FR": blend}, default=models["goss"])
    outer = treescore.Ensemble([route, models["regression"]], weights=[1.0, 0.5], transform="sigmoid")
    out = {name: b.predict(x) for name, b in boosters.items()}
    g = np.arange(len(x)) % 3
    blended = weighted([out["binary"], boosters["dart"].predict(x, raw_score=True)], [0.5, 0.5], "sum")
    routed = np.where(g == 0, out["regression"], np.where(g == 1, blended, out["goss"]))
    assert_queries_exact(df, route, routed, full_scoring, 25, 4, "route", drops=True)
    assert_queries_exact(df, outer, transformed(weighted([routed, out["regression"]], [1.0, 0.5], "mean"), ["sigmoid"]),
                         full_scoring, 25, 4, "route in an ensemble", drops=True)
    partial = treescore.Routed("market", {"DE": models["regression"], "FR": blend}, on_unknown_key="null")
    for descending in (True, False):
        query = df.select("id", treescore.score(partial).alias("s")) \
            .orderBy(F.desc("s") if descending else F.asc("s")).limit(10)
        assert selects(query, 10, "descending" if descending else "ascending")
        got = rows_of(query)
        if descending:
            assert_top(got, np.where(g == 2, -np.inf, routed), 10)  # no IT row reaches the top
        else:
            assert set(got) <= set(np.flatnonzero(g == 2).tolist()) and all(v is None for v in got.values())
        with full_scoring:
            plain = rows_of(query)
        assert sorted(v is None for v in plain.values()) == sorted(v is None for v in got.values())


def test_other_scores_of_the_same_select_are_scored_for_the_kept_rows(spark, tmp_path, regression_booster,
                                                                    binary_booster):
    df, x = feature_frame(spark, tmp_path, 20_000, seed=27)
    reg, binary = treescore.Model.from_booster(regression_booster), treescore.Model.from_booster(binary_booster)
    query = df.select("id", treescore.score(reg).alias("s"), treescore.score(binary).alias("p")) \
        .orderBy(F.desc("s")).limit(12)
    assert selects(query, 12)
    got = query.collect()
    ids = [r["id"] for r in got]
    assert_top({r["id"]: r["s"] for r in got}, regression_booster.predict(x), 12)
    assert_same_bits([r["p"] for r in got], binary_booster.predict(x[ids]))


def test_queries_selection_cannot_serve_are_scored_in_full_and_exact(spark, tmp_path, regression_booster,
                                                                   binary_booster):
    df, x = feature_frame(spark, tmp_path, 5_000, seed=28)
    reg = treescore.Model.from_booster(regression_booster)
    binary = treescore.Model.from_booster(binary_booster)
    negative = treescore.Ensemble([reg, binary], weights=[0.5, -0.5], combine="sum")  # no longer nondecreasing
    cascaded = treescore.Ensemble([reg, treescore.Cascade(binary, reg, accept_below=0.2, accept_above=0.8)])
    filtered = df.select("id", treescore.score(reg).alias("s")).where(F.col("x0") > 0).orderBy(F.desc("s")).limit(5)
    dense = df.select("id", treescore.score(reg).alias("s")) \
        .withColumn("r", F.dense_rank().over(Window.orderBy(F.desc("s")))).where("r <= 5")
    by_negative = df.select("id", treescore.score(negative).alias("s")).orderBy(F.desc("s")).limit(5)
    by_cascaded = df.select("id", treescore.score(cascaded).alias("s")).orderBy(F.desc("s")).limit(5)
    by_expression = df.select("id", (treescore.score(reg) * 2).alias("s")).orderBy(F.desc("s")).limit(5)
    expected = regression_booster.predict(x)
    for query in (dense, by_negative, by_cascaded, by_expression):
        assert "top 5 by" not in plan_of(query)
    assert_top(rows_of(filtered), expected, 5, among=np.flatnonzero(x[:, 0] > 0))
    assert_top({i: v / 2 for i, v in rows_of(by_expression).items()}, expected, 5)
    assert set(rows_of(dense)) == top_with_ties(expected, 5)  # 5 distinct scores or more: at least 5 rows
    assert_top(rows_of(by_negative), weighted([expected, binary_booster.predict(x)], [0.5, -0.5], "sum"), 5)
    assert len(rows_of(by_cascaded)) == 5


def test_lightgbm_engine_queries_are_not_selected(spark, tmp_path, regression_booster):
    df, x = feature_frame(spark, tmp_path, 3_000, seed=29)
    spark.conf.set("spark.treescore.engine", "lightgbm")
    try:
        query = df.select("id", treescore.score(treescore.Model.from_booster(regression_booster)).alias("s")) \
            .orderBy(F.desc("s")).limit(5)
        assert "top 5 by" not in plan_of(query)
        assert_top(rows_of(query), regression_booster.predict(x), 5)
    finally:
        spark.conf.unset("spark.treescore.engine")


def test_sql_order_by_limit(spark, tmp_path, regression_booster):
    df, x = feature_frame(spark, tmp_path, 10_000, seed=30)
    df.createOrReplaceTempView("top_k_rows")
    treescore.register(spark, "top_k_model", treescore.Model.from_booster(regression_booster))
    query = spark.sql("SELECT id, treescore_score('top_k_model') AS s FROM top_k_rows ORDER BY s DESC LIMIT 8")
    assert selects(query, 8)
    assert_top(rows_of(query), regression_booster.predict(x), 8)


def test_top_k_helper_overall_and_per_group(spark, tmp_path, regression_booster):
    df, x, markets = market_frame(spark, tmp_path, 20_000, seed=31)
    model = treescore.Model.from_booster(regression_booster)
    expected = regression_booster.predict(x)
    best = treescore.top_k(df, model, 6)
    assert selects(best, 6)
    assert_top({r["id"]: r["score"] for r in best.collect()}, expected, 6)
    assert best.columns == df.columns + ["score"]
    worst = treescore.top_k(df, model, 2, by="market", score_col="p", ascending=True)
    assert selects(worst, 2, "ascending", per_group=True)
    worst = worst.collect()
    want = set()
    for market in ("DE", "FR", "IT"):
        want |= top_with_ties(expected, 2, descending=False, among=np.flatnonzero(markets == market))
    assert set(r["id"] for r in worst) == want
    assert_same_bits([r["p"] for r in sorted(worst, key=lambda r: r["id"])], expected[sorted(want)])
    blend = treescore.Ensemble([model, treescore.Member(model, raw=True)], weights=[0.25, 0.75], transform="expm1")
    by_blend = treescore.top_k(df, blend, 4, by="market")
    assert selects(by_blend, 4, per_group=True)
    blended = np.array([math.expm1(0.0 + 0.25 * p + 0.75 * r)
                        for p, r in zip(expected, regression_booster.predict(x, raw_score=True))])
    got = {r["id"]: r["score"] for r in by_blend.collect()}
    want = set()
    for market in ("DE", "FR", "IT"):
        want |= top_with_ties(blended, 4, among=np.flatnonzero(markets == market))
    assert set(got) == want
    assert_same_bits([got[i] for i in sorted(got)], blended[sorted(got)])
    with pytest.raises(ValueError, match="k, a whole number of 1 or more"):
        treescore.top_k(df, model, 0)
    with pytest.raises(ValueError, match="column 'nope'"):
        treescore.top_k(df, model, 3, by="nope")


def test_approximate_top_k_ranks_the_cheap_models_candidates_and_reports_what_it_filtered(spark, tmp_path,
                                                                                       regression_booster):
    import lightgbm as lgb

    df, x = feature_frame(spark, tmp_path, 30_000, seed=32)
    expected = regression_booster.predict(x)
    # A cheap imitation: 30 small trees on the five features that matter, trained on the
    # expensive model's output (with 10, hundreds of rows tie at its 500th best score, and
    # which of them are candidates is the sort's choice).
    train = features(5_000, seed=33)
    cheap_booster = lgb.train({"objective": "regression", "num_leaves": 15, "verbose": -1, "num_threads": 1},
                              lgb.Dataset(train[:, :5], regression_booster.predict(train), feature_name=FEATURE_NAMES[:5]),
                              30)
    cheap = treescore.Model.from_booster(cheap_booster)
    result = treescore.top_k(df, treescore.Model.from_booster(regression_booster), 20, cheap=cheap, oversample=25)
    assert isinstance(result, treescore.ApproximateTopK)
    rows = result.df.collect()
    assert len(rows) == 20
    # The candidates: the cheap model's 500 best rows (which of the rows tying with its 500th
    # make it is the sort's choice, but every row above that is in); the result: the expensive
    # model's top 20 of those, with exact scores.
    got = {r["id"]: r["score"] for r in rows}
    cheap_scores = cheap_booster.predict(x[:, :5])
    cheap_bar = np.sort(cheap_scores)[::-1][499]
    assert all(cheap_scores[i] >= cheap_bar for i in got)
    surely = np.flatnonzero(cheap_scores > cheap_bar)
    assert set(surely[expected[surely] > min(got.values())].tolist()) <= set(got)
    assert_same_bits([got[i] for i in sorted(got)], expected[sorted(got)])
    assert result.candidates() == 500
    assert result.rows_scanned() == 30_000 and result.rows_filtered() == 29_500
    # It misses only what the cheap model misranks: every row of the exact top 20 that the cheap
    # model ranks above its 500th is found, and those are most of them.
    exact_top = top_with_ties(expected, 20)
    assert exact_top & set(surely.tolist()) <= set(got)
    assert len(exact_top & set(surely.tolist())) >= 10
    # Per group: each market's candidates reach its own cut.
    (tmp_path / "markets").mkdir()
    df_m, x_m, markets = market_frame(spark, tmp_path / "markets", 9_000, seed=34)
    per_market = treescore.top_k(df_m, treescore.Model.from_booster(regression_booster), 3, by="market",
                                 cheap=cheap, oversample=10)
    got_m = {r["id"]: r["score"] for r in per_market.df.collect()}
    expected_m, cheap_m = regression_booster.predict(x_m), cheap_booster.predict(x_m[:, :5])
    total = 0
    for market in ("DE", "FR", "IT"):
        rows_m = np.flatnonzero(markets == market)
        chosen = rows_m[cheap_m[rows_m] >= np.sort(cheap_m[rows_m])[::-1][29]]
        total += len(chosen)
        assert {i for i in got_m if markets[i] == market} == top_with_ties(expected_m, 3, among=chosen)
    assert per_market.candidates() == total and per_market.rows_filtered() == 9_000 - total
    with pytest.raises(ValueError, match="oversample must be a finite number of 1 or more"):
        treescore.top_k(df, cheap, 5, cheap=cheap, oversample=0.5)


def test_a_model_with_linear_trees_is_scored_in_full(spark):
    """Leaf values bound no linear tree (its leaf's value grows with the row's values), so a top-K
    query over a linear model scores every row, with the same rows and bits as Spark's own sort."""
    booster = linear_booster()
    x = make_rows(2_000, 0, seed=8)
    df = spark.createDataFrame(pd.DataFrame(x, columns=NUMERIC).assign(id=range(len(x))))
    top = df.select("id", treescore.score(treescore.Model.from_booster(booster)).alias("p")).orderBy(F.desc("p")).limit(7)
    assert not selects(top, 7)
    plain = treescore.Model.from_booster(shape_booster("regression"))  # the control: the same query selects
    assert selects(df.select("id", treescore.score(plain).alias("p")).orderBy(F.desc("p")).limit(7), 7)
    expected = np.sort(booster.predict(x))[::-1][:7]
    assert_same_bits(np.array([r["p"] for r in top.collect()]), expected)
