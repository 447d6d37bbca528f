"""kind="contrib" of ensembles, routes, cascades and grids against NumPy references built on
lightgbm's Booster.predict(pred_contrib=True).

Shapley values are linear, so a weighted mean's contributions are its members' weighted mean,
computed here in treescore's documented order (w1*c1 + w2*c2 + ... in member order, then
divided by the weights' sum) and compared bit for bit. Each runs on both engines: treescore's
TreeSHAP and LightGBM's give the same bits.
"""
import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest

import treescore
from conftest import FEATURE_NAMES, assert_same_bits, collect, market_frame, plan_of, train
from test_model_shapes import NUMERIC, SINGLE_OUTPUT_SHAPES, scoring_rows
from test_model_shapes import train as shape_booster


@pytest.fixture(scope="module")
def boosters():
    return [train("regression", rounds=20, seed=s) for s in (1, 2, 3)] + [train("binary", rounds=20, seed=4)]


@pytest.fixture(scope="module")
def models(boosters):
    return [treescore.Model.from_booster(b) for b in boosters]


@pytest.fixture(scope="module")
def data(spark, tmp_path_factory):
    return market_frame(spark, tmp_path_factory.mktemp("contrib"), 3_000, seed=71)


def on_inputs(booster, x, inputs, columns=None, x_names=FEATURE_NAMES):
    """The booster's contributions (raw space) mapped onto `inputs` plus the expected value: the
    model reads column columns[f] (its own name by default) for feature f of x (whose columns
    are x_names); features reading one input add up in feature order, inputs it does not read are 0."""
    reads = [(columns or {}).get(name, name) for name in booster.feature_name()]
    shap = booster.predict(x[:, [x_names.index(c) for c in reads]], pred_contrib=True)
    out = np.zeros((len(x), len(inputs) + 1))
    seen = set()
    for f, column in enumerate(reads):
        i = inputs.index(column)
        out[:, i] = shap[:, f] if i not in seen else out[:, i] + shap[:, f]
        seen.add(i)
    out[:, -1] = shap[:, -1]
    return out


def weighted_mean(parts, weights, combine="mean"):
    total = weights[0] * parts[0]
    for w, part in zip(weights[1:], parts[1:]):
        total = total + w * part
    return total / sum(weights) if combine == "mean" else total


def test_a_weighted_mean_gives_its_members_weighted_mean_and_rows_sum_to_the_score(spark, data, boosters, models, engine):
    df, x, _ = data
    weights = [0.5, 0.3, 0.2]
    ensemble = treescore.Ensemble(models[:3], weights=weights)
    assert ensemble.inputs() == FEATURE_NAMES
    scored = df.select("id", treescore.score(ensemble, kind="contrib").alias("c"), treescore.score(ensemble).alias("s"))
    assert plan_of(scored).count("BatchScore [") == 1
    got = collect(scored, "c")
    expected = weighted_mean([on_inputs(b, x, FEATURE_NAMES) for b in boosters[:3]], weights)
    assert got.shape == (len(x), len(FEATURE_NAMES) + 1)
    assert_same_bits(got, expected)
    # Each row's values add up to its score (the mean of regressions is raw), up to rounding.
    np.testing.assert_allclose(got.sum(axis=1), collect(scored, "s"), rtol=1e-12, atol=1e-12)


def test_members_reading_other_columns_and_raw_members_under_a_sigmoid(spark, data, boosters, models, engine):
    df, x, _ = data
    # Member 2 reads x5 for its feature x0 as well as for x5: both land on input x5.
    ensemble = treescore.Ensemble([models[0], treescore.Member(models[1], columns={"x0": "x5"}),
                                   treescore.Member(models[3], raw=True)], weights=[0.25, 0.5, 2.0],
                                  combine="sum", transform="sigmoid")
    inputs = ensemble.inputs()
    assert inputs == FEATURE_NAMES
    got = collect(df.select("id", treescore.score(ensemble, kind="contrib").alias("c")), "c")
    expected = weighted_mean([on_inputs(boosters[0], x, inputs), on_inputs(boosters[1], x, inputs, {"x0": "x5"}),
                              on_inputs(boosters[3], x, inputs)], [0.25, 0.5, 2.0], "sum")
    assert_same_bits(got, expected)
    # The sigmoid is left out: the values explain the combined raw score, whose sigmoid is the score.
    scores = collect(df.select("id", treescore.score(ensemble).alias("s")), "s")
    np.testing.assert_allclose(1 / (1 + np.exp(-got.sum(axis=1))), scores, rtol=1e-12)


def test_a_route_uses_the_chosen_scorers_contributions_and_unknown_keys_give_null(spark, data, boosters, models, engine):
    df, x, markets = data
    de = treescore.Ensemble(models[:2], weights=[0.6, 0.4])
    routed = treescore.Routed("market", {"DE": de, "FR": treescore.Member(models[3], raw=True)}, on_unknown_key="null")
    got = df.select("id", treescore.score(routed, kind="contrib").alias("c")).orderBy("id").toPandas()["c"]
    by_market = {"DE": weighted_mean([on_inputs(b, x, FEATURE_NAMES) for b in boosters[:2]], [0.6, 0.4]),
                 "FR": on_inputs(boosters[3], x, FEATURE_NAMES)}
    for market in ("DE", "FR"):
        rows = np.flatnonzero(markets == market)
        assert_same_bits(np.stack([got[i] for i in rows]), by_market[market][rows])
    assert all(got[i] is None for i in np.flatnonzero(markets == "IT"))


def test_a_cascade_uses_the_contributions_of_the_stage_that_answered(spark, data, boosters, models, engine):
    df, x, _ = data
    full = treescore.Ensemble(models[:3])
    cascade = treescore.Cascade(models[3], full, 0.25, 0.75)
    got = collect(df.select("id", treescore.score(cascade, kind="contrib").alias("c")), "c")
    first = boosters[3].predict(x)
    answered_first = (first < 0.25) | (first > 0.75)
    assert 0 < answered_first.sum() < len(x)
    expected = np.where(answered_first[:, None], on_inputs(boosters[3], x, FEATURE_NAMES),
                        weighted_mean([on_inputs(b, x, FEATURE_NAMES) for b in boosters[:3]], [1.0, 1.0, 1.0]))
    assert_same_bits(got, expected)


def test_every_grid_point_has_the_contributions_of_that_point_scored_alone(spark, data, boosters, models, engine):
    df, x, _ = data
    ensemble = treescore.Ensemble(models[:2], weights=[0.7, 0.3])
    values = [0.0, 0.25, np.nextafter(0.5, 1.0)]
    scored = df.select("id", treescore.score_grid(ensemble, vary={"x2": values}, derived={"x3": "x3 * (1 - x2)"},
                                                  kind="contrib").alias("c"))
    got = scored.orderBy("id").toPandas()["c"]
    for k, v in enumerate(values):
        point = x.copy()
        point[:, 2] = v
        point[:, 3] = x[:, 3] * (1 - v)
        expected = weighted_mean([on_inputs(b, point, FEATURE_NAMES) for b in boosters[:2]], [0.7, 0.3])
        assert_same_bits(np.stack([np.asarray(row[k]) for row in got]), expected, f"grid point {k}")


@pytest.mark.parametrize("build, reason", [
    (lambda m: treescore.Ensemble(m[:2], combine="max"), "max combination is not linear"),
    (lambda m: treescore.Ensemble(m[:2], combine="median"), "median combination is not linear"),
    (lambda m: treescore.Ensemble(m[:2], transform=("clip", 0, None)), "a clip is not a link function"),
    (lambda m: treescore.Ensemble([m[0], m[3]]), "objective (binary) transforms the raw score"),
    (lambda m: treescore.Ensemble([treescore.Ensemble(m[:2], transform="expm1"), m[2]]),
     "apply before an outer ensemble combines it"),
    (lambda m: treescore.Grid(m[0], vary={"x1": [0.0, 1.0]}, monotone="increasing"), "running max or min"),
])
def test_combinations_that_are_not_linear_are_refused_naming_why(spark, models, build, reason):
    with pytest.raises(Exception, match="not exact") as error:
        treescore.score(build(models), kind="contrib")
    assert reason in str(error.value)


def test_a_square_rooted_regression_is_refused_and_other_regressions_are_raw(spark, data):
    df, x, _ = data
    label = x[:, 0] ** 2 + np.abs(x[:, 1])

    def fit(**params):
        params = {"num_leaves": 7, "verbose": -1, "num_threads": 1, **params}
        booster = lgb.train(params, lgb.Dataset(x, label, feature_name=FEATURE_NAMES), 5)
        return booster, treescore.Model.from_booster(booster)

    _, sqrt_model = fit(objective="regression", reg_sqrt=True)
    (huber, huber_model), (l1, l1_model) = fit(objective="huber"), fit(objective="regression_l1")
    with pytest.raises(Exception, match=r"objective \(regression\) transforms the raw score"):
        treescore.score(treescore.Ensemble([sqrt_model, l1_model]), kind="contrib")
    got = collect(df.select("id", treescore.score(treescore.Ensemble([huber_model, l1_model]), kind="contrib")
                            .alias("c")), "c")
    assert_same_bits(got, weighted_mean([on_inputs(huber, x, FEATURE_NAMES), on_inputs(l1, x, FEATURE_NAMES)],
                                        [1.0, 1.0]))


def test_other_kinds_and_iterations_are_refused_for_scorers(spark, models):
    ensemble = treescore.Ensemble(models[:2])
    for kind in ("raw", "leaf"):
        with pytest.raises(ValueError, match="'prediction' or 'contrib'"):
            treescore.score(ensemble, kind=kind)
    with pytest.raises(ValueError, match="iterations"):
        treescore.score(ensemble, kind="contrib", num_iterations=3)


def test_sql_takes_the_contrib_option_for_a_registered_ensemble(spark, data, boosters, models, engine):
    df, x, _ = data
    df.createOrReplaceTempView("contrib_rows")
    treescore.register(spark, "contrib_blend", treescore.Ensemble(models[:2], weights=[0.25, 0.75], combine="sum"))
    got = collect(spark.sql("SELECT id, treescore_score('contrib_blend', map('kind', 'contrib')) AS c "
                            "FROM contrib_rows"), "c")
    expected = weighted_mean([on_inputs(b, x, FEATURE_NAMES) for b in boosters[:2]], [0.25, 0.75], "sum")
    assert_same_bits(got, expected)


@pytest.fixture(scope="module")
def wide_categorical():
    """A regression on 1,000 category codes, the second member of every hostile-data ensemble."""
    return shape_booster("categorical_1000")


# On LightGBM's engine the members' contributions are LightGBM's own predict_contrib, and the
# ensemble's arithmetic over them is the same code as on treescore's: a few shapes cover it there
# (a sigmoid objective, rf's averaging, a categorical); the other 24 shapes added 65 s on it.
LIGHTGBM_ENGINE_SHAPES = ("binary", "rf", "categorical_200")


@pytest.mark.parametrize("name, engine", [(n, "treescore") for n in SINGLE_OUTPUT_SHAPES] +
                         [(n, "lightgbm") for n in LIGHTGBM_ENGINE_SHAPES], indirect=["engine"])
def test_every_objective_and_boosting_on_hostile_values_with_a_wide_categorical(spark, name, wide_categorical, engine):
    """Each single-output shape of test_model_shapes (every objective, rf, dart, goss, deep trees,
    categoricals), raw, summed with a 1,000-code categorical regression, over that test's rows:
    NaN, +-0, +-inf, tiny and huge values, every threshold and one ulp either side, odd codes."""
    booster = shape_booster(name)
    x = np.vstack([scoring_rows(booster, 1000), scoring_rows(wide_categorical, 1000)])
    names = NUMERIC + ["cat"]
    frame = pd.DataFrame(x, columns=names)
    frame.insert(0, "id", np.arange(len(x)))
    df = spark.createDataFrame(frame)
    ensemble = treescore.Ensemble([treescore.Member(treescore.Model.from_booster(booster), raw=True),
                                   treescore.Model.from_booster(wide_categorical)], weights=[0.6, 0.4], combine="sum")
    inputs = ensemble.inputs()
    got = collect(df.select("id", treescore.score(ensemble, kind="contrib").alias("c")), "c")
    expected = weighted_mean([on_inputs(booster, x, inputs, x_names=names),
                              on_inputs(wide_categorical, x, inputs, x_names=names)], [0.6, 0.4], "sum")
    assert_same_bits(got, expected, name)
