"""Ensembles, routes, cascades and grids against NumPy references built on lightgbm.Booster.predict.

The references follow treescore's documented order of operations (members in order, weights
applied first, transforms with libm's functions via Python's math module), so they are
compared with ==.
"""
import json
import math
import os

import numpy as np
import pytest
from pyspark.sql import functions as F

import treescore
from conftest import assert_same_bits, collect, market_frame, plan_of, train


pytestmark = pytest.mark.usefixtures("engine")  # every test runs on each engine


@pytest.fixture(scope="module")
def boosters():
    return [train("regression", rounds=20, seed=s) for s in (1, 2, 3)] + [train("binary", rounds=20, seed=4)]


@pytest.fixture(scope="module")
def data(spark, tmp_path_factory):
    return market_frame(spark, tmp_path_factory.mktemp("ens"), 6_000, seed=61)


def weighted(predictions, weights, combine):
    out = np.empty(len(predictions[0]))
    for i in range(len(out)):
        values = [w * p[i] for w, p in zip(weights, predictions)]
        if combine in ("sum", "mean"):
            total = 0.0
            for v in values:
                total += v
            out[i] = total if combine == "sum" else total / sum(weights)
        else:
            out[i] = {"min": min, "max": max}[combine](values) if combine != "median" else float(np.median(values))
    return out


TRANSFORMS = {
    "exp": math.exp,
    "expm1": math.expm1,
    "sigmoid": lambda v: 1.0 / (1.0 + math.exp(-v)),
}


def transformed(values, transforms) -> np.ndarray:
    """values through the transforms in order, element by element with libm's functions; a
    ("clip", lo, hi) with None for an open side."""
    for t in transforms:
        if isinstance(t, tuple):
            lo = -math.inf if t[1] is None else t[1]
            hi = math.inf if t[2] is None else t[2]
            values = np.array([min(max(v, lo), hi) for v in values])
        else:
            values = np.array([TRANSFORMS[t](v) for v in values])
    return values


@pytest.mark.parametrize("combine", ["mean", "sum", "min", "max", "median"])
def test_ensemble_combine_rules(spark, data, boosters, combine):
    df, x, _ = data
    models = [treescore.Model.from_booster(b) for b in boosters[:3]]
    weights = [0.5, 0.3, 0.2]
    scored = df.select("id", treescore.score(treescore.Ensemble(models, weights=weights, combine=combine)).alias("s"))
    assert plan_of(scored).count("BatchScore [") == 1
    expected = weighted([b.predict(x) for b in boosters[:3]], weights, combine)
    assert_same_bits(collect(scored), expected)


@pytest.mark.parametrize("transform", [["exp"], ["expm1", ("clip", 0, None)], ["sigmoid"], [("clip", -0.5, 0.5)]])
def test_ensemble_transforms(spark, data, boosters, transform):
    df, x, _ = data
    models = [treescore.Model.from_booster(b) for b in boosters[:2]]
    scored = df.select("id", treescore.score(treescore.Ensemble(models, transform=transform)).alias("s"))
    expected = transformed(weighted([b.predict(x) for b in boosters[:2]], [1.0, 1.0], "mean"), transform)
    assert_same_bits(collect(scored), expected)


def test_members_with_their_own_columns(spark, data, boosters):
    df, x, _ = data
    model = treescore.Model.from_booster(boosters[0])
    shifted = df.withColumn("x0_alt", F.col("x1")).withColumn("x1_alt", F.col("x0"))
    member = treescore.Member(model, columns={"x0": "x0_alt", "x1": "x1_alt"})
    scored = shifted.select("id", treescore.score(treescore.Ensemble([model, member])).alias("s"))
    swapped = x.copy()
    swapped[:, [0, 1]] = x[:, [1, 0]]
    expected = weighted([boosters[0].predict(x), boosters[0].predict(swapped)], [1.0, 1.0], "mean")
    assert_same_bits(collect(scored), expected)


def test_routed_by_market_with_default_error_and_null(spark, data, boosters):
    df, x, markets = data
    de, fr, other = (treescore.Model.from_booster(b) for b in boosters[:3])
    scored = df.select("id", treescore.score(treescore.Routed("market", {"DE": de, "FR": fr}, default=other)).alias("s"))
    predictions = {m: boosters[i].predict(x) for i, m in enumerate(["DE", "FR", "IT"])}
    expected = np.array([predictions[m][i] for i, m in enumerate(markets)])
    assert plan_of(scored).count("BatchScore [") == 1
    assert_same_bits(collect(scored), expected)

    with pytest.raises(Exception, match="the route on 'market' has no scorer for key 'IT' and no default"):
        df.select(treescore.score(treescore.Routed("market", {"DE": de, "FR": fr}))).collect()

    nulls = collect(df.select("id", treescore.score(
        treescore.Routed("market", {"DE": de}, on_unknown_key="null")).alias("s")))
    assert all((v is None or np.isnan(v)) == (m != "DE") for v, m in zip(nulls, markets))


def test_cascade_escalates_only_unconfident_rows(spark, data, boosters):
    df, x, _ = data
    cheap, full = treescore.Model.from_booster(boosters[3]), treescore.Model.from_booster(boosters[0])
    scored = df.select("id", treescore.score(treescore.Cascade(cheap, full, 0.25, 0.75)).alias("s"))
    first = boosters[3].predict(x)
    confident = (first < 0.25) | (first > 0.75)
    expected = np.where(confident, first, boosters[0].predict(x))
    assert_same_bits(collect(scored), expected)
    assert 0 < (~confident).sum() < len(x)
    escalated = [n for n in _batch_metrics(scored) if n[0] == "rows escalated by cascades"]
    assert escalated and escalated[0][1] == int((~confident).sum())


def _batch_metrics(df):
    df.collect()
    plan = df._jdf.queryExecution().executedPlan()
    found = []

    def walk(node):
        if node.nodeName() == "BatchScore":
            metrics = node.metrics()
            for key in ["escalatedRows", "numOutputRows"]:
                metric = metrics.apply(key)
                found.append((metric.name().get(), metric.value()))
        children = node.children()
        for i in range(children.size()):
            walk(children.apply(i))
        if node.nodeName() == "AdaptiveSparkPlan":
            walk(node.executedPlan())

    walk(plan)
    return found


def test_grid_equals_each_point_scored_separately(spark, data, boosters):
    df, x, _ = data
    model = treescore.Model.from_booster(boosters[0])
    values = [0.0, 0.1, 0.25, 0.5, 0.7]
    scored = df.select("id", treescore.score_grid(model, vary={"x2": values}, derived={"x3": "x3 * (1 - x2)"},
                                                  monotone="decreasing").alias("s"))
    assert plan_of(scored).count("BatchScore [") == 1
    columns = []
    for v in values:
        point = x.copy()
        point[:, 2] = v
        point[:, 3] = x[:, 3] * (1 - v)
        columns.append(boosters[0].predict(point))
    expected = np.minimum.accumulate(np.column_stack(columns), axis=1)
    assert_same_bits(collect(scored), expected)


def thresholds_of(booster, feature: int) -> list:
    """Every threshold the model compares `feature` with, from its text (printed exactly)."""
    found = []
    lines = booster.model_to_string().splitlines()
    for split_line, threshold_line in zip([l for l in lines if l.startswith("split_feature=")],
                                          [l for l in lines if l.startswith("threshold=")]):
        for f, t in zip(split_line.split("=")[1].split(), threshold_line.split("=")[1].split()):
            if int(f) == feature:
                found.append(float(t))
    return found


def test_grid_over_two_inputs_is_their_cross_product(spark, data, boosters):
    """Two varied inputs at thresholds of the model and one ulp either side (and +-0), a derived
    input reading both, and an increasing curve along the last axis, for each value of the first."""
    df, x, _ = data
    booster = boosters[1]
    rng = np.random.default_rng(7)
    near = lambda t: [t, float(np.nextafter(t, np.inf)), float(np.nextafter(t, -np.inf))]
    a = [0.0, -0.0] + [v for t in rng.choice(thresholds_of(booster, 0), 2) for v in near(float(t))]
    b = [v for t in rng.choice(thresholds_of(booster, 2), 2) for v in near(float(t))] + [3.5]
    model = treescore.Model.from_booster(booster)
    grid = treescore.score_grid(model, vary={"x0": a, "x2": b}, derived={"x4": "x4 + x0 * x2"}, monotone="increasing")
    scored = df.select("id", grid.alias("s"))
    assert plan_of(scored).count("BatchScore [") == 1
    columns = []
    for va in a:
        for vb in b:
            point = x.copy()
            point[:, 0], point[:, 2] = va, vb
            point[:, 4] = x[:, 4] + va * vb
            columns.append(booster.predict(point))
    surface = np.column_stack(columns).reshape(len(x), len(a), len(b))
    expected = np.maximum.accumulate(surface, axis=2).reshape(len(x), len(a) * len(b))
    assert_same_bits(collect(scored), expected)


def test_nested_route_of_ensembles_and_cascade_inside_a_grid(spark, data, boosters):
    df, x, markets = data
    m = [treescore.Model.from_booster(b) for b in boosters]
    ensemble = treescore.Ensemble(m[:3], weights=[0.2, 0.3, 0.5], transform=["expm1", ("clip", 0, None)])
    cascade = treescore.Cascade(m[3], treescore.Ensemble(m[:2]), 0.3, 0.7)
    nested = treescore.Routed("market", {"DE": ensemble, "FR": cascade}, default=m[2])
    values = [-1.0, 0.0, 1.0]
    scored = df.select("id", treescore.score_grid(nested, vary={"x0": values}).alias("s"))
    assert plan_of(scored).count("BatchScore [") == 1
    columns = []
    for v in values:
        point = x.copy()
        point[:, 0] = v
        p = [b.predict(point) for b in boosters]
        ens = np.array([max(math.expm1(t), 0.0) for t in weighted(p[:3], [0.2, 0.3, 0.5], "mean")])
        first = p[3]
        casc = np.where((first < 0.3) | (first > 0.7), first, weighted(p[:2], [1.0, 1.0], "mean"))
        columns.append(np.where(markets == "DE", ens, np.where(markets == "FR", casc, p[2])))
    assert_same_bits(collect(scored), np.column_stack(columns))


def test_save_and_load_in_python_and_scala(spark, data, boosters, tmp_path):
    df, _, _ = data
    m = [treescore.Model.from_booster(b) for b in boosters]
    spec = treescore.Grid(treescore.Routed("market", {"DE": treescore.Ensemble(m[:3], weights=[1, 2, 3])},
                                           default=treescore.Cascade(m[3], m[0], 0.2, 0.8)),
                          vary={"x1": [0.0, 0.5]}, derived={"x2": "x2 + x1"}, monotone="increasing")
    two_axes = treescore.Grid(treescore.Ensemble(m[:2]), vary={"x1": [0.0, 0.5], "x3": [1.0, -1.0, 2.0]},
                              derived={"x2": "x2 + x1 * x3"})
    for name, scorer, written_vary in (("one", spec, "x1"),
                                       ("two", two_axes, [{"input": "x1", "values": [0.0, 0.5]},
                                                          {"input": "x3", "values": [1.0, -1.0, 2.0]}])):
        path = str(tmp_path / name)
        scorer.save(path)
        with open(os.path.join(path, "spec.json")) as f:
            written = json.load(f)["scorer"]
        assert written["type"] == "grid" and written["vary"] == written_vary
        loaded = treescore.load(path)
        scala_loaded = spark._jvm.treescore.ensemble.SpecIO.load(path)
        assert scala_loaded.equals(loaded._java())
        original = collect(df.select("id", treescore.score(scorer).alias("s")))
        assert_same_bits(collect(df.select("id", treescore.score(loaded).alias("s"))), original)


def test_loaded_specs_nest_inside_new_ones(spark, data, boosters, tmp_path):
    df, x, _ = data
    m = [treescore.Model.from_booster(b) for b in boosters[:2]]
    path = str(tmp_path / "pair")
    treescore.Ensemble(m, weights=[1, 3]).save(path)
    outer = treescore.Ensemble([treescore.load(path), m[0]], combine="sum")
    scored = collect(df.select("id", treescore.score(outer).alias("s")))
    inner = weighted([boosters[0].predict(x), boosters[1].predict(x)], [1.0, 3.0], "mean")
    assert_same_bits(scored, weighted([inner, boosters[0].predict(x)], [1.0, 1.0], "sum"))


def test_bad_specs_name_the_offending_part(spark, boosters, tmp_path):
    m = [treescore.Model.from_booster(b) for b in boosters[:2]]
    with pytest.raises(ValueError, match="an ensemble of 2 members needs 2 weights, got 1"):
        treescore.Ensemble(m, weights=[1.0])
    with pytest.raises(ValueError, match="unknown transform 'log'"):
        treescore.Ensemble(m, transform="log")
    with pytest.raises(ValueError, match=r"the grid varies 'price', which is not an input"):
        treescore.score_grid(m[0], vary={"price": [1.0]})
    with pytest.raises(ValueError, match="vary must map at least one input"):
        treescore.score_grid(m[0], vary={})
    with pytest.raises(ValueError, match=r"the grid derives 'x1', which is not another input"):
        treescore.score_grid(m[0], vary={"x0": [1.0], "x1": [2.0]}, derived={"x1": "x0 * 2"})
    with pytest.raises(ValueError, match=r"the grid has 1050625 points; at most 1048576 per row"):
        treescore.score_grid(m[0], vary={"x0": list(range(1025)), "x1": list(range(1025))})
    grid_path = str(tmp_path / "grid")
    treescore.Grid(m[0], vary={"x0": [1.0], "x1": [2.0]}).save(grid_path)
    with open(os.path.join(grid_path, "spec.json")) as f:
        grid_spec = json.load(f)
    grid_spec["scorer"]["vary"][1] = {"input": "x1"}
    with open(os.path.join(grid_path, "spec.json"), "w") as f:
        json.dump(grid_spec, f)
    with pytest.raises(ValueError, match=r"invalid scorer spec at \$\.scorer\.vary\[1\]: 'values' is missing"):
        treescore.load(grid_path)
    path = str(tmp_path / "spec")
    treescore.Ensemble(m, weights=[1, 2], combine="median").save(path)
    spec_file = os.path.join(path, "spec.json")
    with open(spec_file) as f:
        spec = json.load(f)
    spec["scorer"]["combine"] = "mode"
    with open(spec_file, "w") as f:
        json.dump(spec, f)
    with pytest.raises(ValueError, match=r"invalid scorer spec at \$\.scorer: unknown combine rule 'mode'"):
        treescore.load(path)
