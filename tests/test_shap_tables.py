"""The driver's estimate of treescore's TreeSHAP tables (treescore.model.TreeShapTables, read from
the model text in the JVM) against what the native engine builds (TreeShap::Stats): the model
cache's budget rests on the estimate, so both must count the same leaves, replays and addends;
and `auto` keeps contributions on the engine however much of them replays."""
import time

import lightgbm as lgb
import numpy as np
import pytest
import treescore_native

import treescore
from test_model_shapes import SINGLE_OUTPUT_SHAPES
from test_model_shapes import train as shape_booster


def deep_forest(trees: int, max_depth: int) -> str:
    """255-leaf trees on 60 features: deep leaves and, from some tens of trees, more table
    addends than one model may keep, so some shallow leaves replay too."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(20_000, 60))
    y = np.sin(x[:, :30] * 3).sum(axis=1) + x[:, 30:] @ rng.normal(size=30) + rng.normal(size=len(x))
    params = {"objective": "regression", "num_leaves": 255, "max_depth": max_depth, "min_data_in_leaf": 5,
              "max_bin": 63, "verbose": -1, "num_threads": 2, "seed": 3}
    return lgb.train(params, lgb.Dataset(x, y), trees).model_to_string()


def estimate(spark, text):
    tables = spark._jvm.treescore.model.TreeModel.fromString(text).shapTables()
    return {"leaves": tables.leaves(), "replayed_leaves": tables.replayedLeaves(),
            "table_addends": tables.tableAddends()}, tables


@pytest.mark.parametrize("name", [n for n in SINGLE_OUTPUT_SHAPES if n in ("regression", "rf", "255_leaves_deep")])
def test_the_driver_counts_the_tables_the_engine_builds(spark, name):
    text = shape_booster(name).model_to_string()
    counted, _ = estimate(spark, text)
    assert counted == treescore_native.ExactScorer(text).shap_tables()
    assert counted["leaves"] > 0
    assert treescore.Model.from_string(text).engine("contrib") == "treescore"


@pytest.mark.parametrize("name", ["regression", "255_leaves_deep"])
def test_within_a_smaller_table_budget_the_driver_counts_what_the_engine_keeps(spark, name):
    """The model cache gives a model's tables what its budget leaves once the model is loaded:
    the driver must choose the same leaves as the engine under any such budget."""
    text = shape_booster(name).model_to_string()
    _, tables = estimate(spark, text)
    full = tables.tableAddends()
    assert full > 3
    budgets = sorted({0, 1, full // 3, full // 2 + 1, full - 1, full})
    for most in budgets:
        within = tables.within(most)
        counted = {"leaves": within.leaves(), "replayed_leaves": within.replayedLeaves(),
                   "table_addends": within.tableAddends()}
        assert counted == treescore_native.ExactScorer(text, max_table_addends=most).shap_tables(), most
        assert counted["table_addends"] <= most
    assert tables.within(0).replayedShare() > tables.replayedShare()


@pytest.mark.parametrize("trees, max_depth", [(12, 12), (60, -1)])
def test_past_the_budget_the_smallest_tables_are_kept_and_auto_keeps_the_engine(spark, trees, max_depth):
    text = deep_forest(trees, max_depth)
    counted, tables = estimate(spark, text)
    started = time.perf_counter()
    assert counted == treescore_native.ExactScorer(text).shap_tables()
    print(f"tables of {counted['table_addends']:,} addends built in {time.perf_counter() - started:.1f} s")
    limit = spark._jvm.treescore.wire.WireLimits.TreeShapMaxTableAddends()
    assert limit - counted["table_addends"] < limit // 10 < counted["table_addends"]
    assert 0 < counted["replayed_leaves"] < counted["leaves"]
    # Replays cost about LightGBM's own TreeSHAP at worst, and rows that repeat a pattern share
    # them, so even models that replay most of their work stay on the engine.
    assert tables.replayedShare() > 0
    assert treescore.Model.from_string(text).engine("contrib") == "treescore"
