"""Differential fuzzing of treescore's own exact evaluator against lightgbm.Booster.predict of
the pinned release: trained models of every shape the loader test uses, scored on random rows
full of what breaks evaluators (NaN, +-0, +-inf, subnormals, the neighbours of LightGBM's zero
threshold, every split threshold and its neighbours one ulp away, odd categorical codes), every
output kind (TreeSHAP contributions too) and iteration ranges, compared bit for bit; and
models with linear trees, in every layout and SIMD level."""
import platform
import zlib

import numpy as np
import pytest

from conftest import assert_same_bits, plan_of
from test_model_shapes import LINEAR_SHAPES, NUMERIC, SHAPES, scoring_rows, train
import treescore
import treescore_native

SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-35, -1e-35, float(np.float32(1e-35)),
                    np.nextafter(float(np.float32(1e-35)), 1), np.nextafter(float(np.float32(1e-35)), 0),
                    5e-324, -5e-324, 2.2e-308, 1e300, -1e300, 2 ** 31, -2 ** 31 - 1.0, 0.5, -0.99])


def fuzz_rows(booster, categories: int, seed: int) -> np.ndarray:
    """The shape test's rows, then rows where every value is drawn from SPECIAL or the model's thresholds."""
    base = scoring_rows(booster, categories)
    rng = np.random.default_rng(seed)
    pool = np.concatenate([SPECIAL, base[np.isfinite(base)][:2_000]])
    wild = rng.choice(pool, size=(4_000, base.shape[1]))
    return np.vstack([base, wild])


def layouts(name: str):
    """Every layout the model fits: the node walk always, QuickScorer up to 64 leaves per tree."""
    return ["node walk"] + (["quickscorer"] if SHAPES[name][0].get("num_leaves", 31) <= 64 else [])


@pytest.mark.parametrize("name, layout", [(n, layout) for n in SHAPES for layout in layouts(n)])
def test_engine_equals_lightgbm_bit_for_bit(name, layout):
    booster = train(name)
    x = fuzz_rows(booster, SHAPES[name][1], seed=zlib.crc32(name.encode()))
    engine = treescore_native.ExactScorer(booster.model_to_string(), layout)
    assert engine.layout == layout
    total = booster.num_trees() // booster.num_model_per_iteration()
    for kind, args in (("prediction", {}), ("raw", {"raw_score": True}), ("leaf", {"pred_leaf": True}),
                       ("contrib", {"pred_contrib": True})):
        expected = booster.predict(x, **args)
        assert_same_bits(engine.predict(x, kind).reshape(expected.shape), expected, f"{name} {kind}")
        two_threads = engine.predict(x, kind, num_threads=2)  # rows split in two: the same bits
        assert_same_bits(two_threads.reshape(expected.shape), expected, f"{name} {kind} on 2 threads")
        for start, count in ((1, 3), (total // 2, -1), (total + 5, 2)):
            expected = booster.predict(x, start_iteration=start, num_iteration=count, **args)
            got = engine.predict(x, kind, start_iteration=start, num_iterations=count)
            assert_same_bits(got.reshape(expected.shape), expected, f"{name} {kind} iterations {start}+{count}")


@pytest.mark.parametrize("name", SHAPES)
def test_contributions_under_a_smaller_table_budget_give_lightgbm_bits(name):
    """A model cache with little room gives a model fewer TreeSHAP tables (none, or a third of
    them): every leaf without one replays its path, on the same hostile rows, with the same bits."""
    booster = train(name)
    text = booster.model_to_string()
    x = fuzz_rows(booster, SHAPES[name][1], seed=zlib.crc32(name.encode()) + 1)
    expected = booster.predict(x, pred_contrib=True)
    full = treescore_native.ExactScorer(text).shap_tables()
    for most in (0, full["table_addends"] // 3):
        engine = treescore_native.ExactScorer(text, max_table_addends=most)
        assert engine.shap_tables()["table_addends"] <= most
        assert engine.shap_tables()["replayed_leaves"] >= full["replayed_leaves"]
        assert_same_bits(engine.predict(x, "contrib").reshape(expected.shape), expected, f"{name}, tables <= {most}")


@pytest.mark.parametrize("name", SHAPES)
def test_every_simd_level_gives_lightgbm_bits(name):
    """The engine's vector code is compiled once per SIMD level (AVX-512, AVX2, the baseline), and
    on AVX-512 the node walk walks eight rows at once with gathers; each layout on each level
    alone gives LightGBM's leaves and scores on the fuzz rows, with QuickScorer's 32-bit leaf
    sets for forests whose trees have at most 32 leaves and its 64-bit sets for the others."""
    booster = train(name)
    most_leaves = max(tree["num_leaves"] for tree in booster.dump_model()["tree_info"])
    x = fuzz_rows(booster, SHAPES[name][1], seed=zlib.crc32(name.encode()) + 1)
    x = x[: len(x) // 16 * 16 - 11]  # blocks of 16 rows, then one of 5, which runs on half the lanes
    expected = {kind: booster.predict(x, **args)
                for kind, args in (("raw", {"raw_score": True}), ("leaf", {"pred_leaf": True}))}
    if platform.machine() == "x86_64":
        assert len(treescore_native.simd_levels()) >= 2, "every x86-64 machine this project tests on has AVX2"
    for layout in layouts(name):
        for simd in treescore_native.simd_levels():
            engine = treescore_native.ExactScorer(booster.model_to_string(), layout, simd)
            assert (engine.layout, engine.simd) == (layout, simd)
            if layout == "quickscorer":
                assert engine.leaf_set_bits == (32 if most_leaves <= 32 else 64)
            for kind, want in expected.items():
                assert_same_bits(engine.predict(x, kind).reshape(want.shape), want, f"{name} {kind} {layout} on {simd}")


def test_an_unknown_simd_level_is_refused_naming_the_known_ones():
    with pytest.raises(ValueError, match="unknown SIMD level 'sse4'; expected one of baseline, avx2, avx512"):
        treescore_native.ExactScorer(train("regression").model_to_string(), "auto", "sse4")


def with_a_nan_threshold(text: str) -> str:
    """The model text with its first tree's first threshold NaN, as only hand-made models have
    (without tree_sizes, which the edit makes wrong)."""
    at = text.index("\nthreshold=", text.index("Tree=0")) + len("\nthreshold=")
    end = min(text.index(" ", at), text.index("\n", at))
    edited = text[:at] + "nan" + text[end:]
    return "\n".join(line for line in edited.split("\n") if not line.startswith("tree_sizes="))


@pytest.mark.parametrize("name, layout", [("regression", "quickscorer, 32-bit leaf sets"),
                                          ("64_leaves", "quickscorer, 64-bit leaf sets"),
                                          ("255_leaves_deep", "node walk"),
                                          ("nan_threshold", "node walk")])
def test_plans_name_the_layout_the_engine_chooses(spark, name, layout):
    """The JVM names the layout in plans by the engine's rule and limits (wire/limits.txt), read
    off the model text; here that name is held to the layout the engine itself chooses."""
    text = with_a_nan_threshold(train("regression").model_to_string()) if name == "nan_threshold" \
        else train(name).model_to_string()
    engine = treescore_native.ExactScorer(text)
    chosen = "node walk" if engine.layout == "node walk" else f"quickscorer, {engine.leaf_set_bits}-bit leaf sets"
    assert chosen == layout
    model = treescore.Model.from_string(text)
    rows = spark.range(4).selectExpr(*[f"cast(id as double) as {n}" for n in NUMERIC])
    plan = plan_of(rows.select(treescore.score(model).alias("p"), treescore.score(model, kind="contrib").alias("c")))
    assert f"on the treescore engine ({layout})" in plan, plan
    assert "on the treescore engine (TreeSHAP)" in plan, plan


def test_the_zero_threshold_is_the_float_literal_widened():
    """1e-35 itself is at or below kZeroThreshold (1e-35f widened), so LightGBM reads it as +0.0."""
    booster = train("zero_as_missing")
    engine = treescore_native.ExactScorer(booster.model_to_string())
    t = float(np.float32(1e-35))
    x = np.zeros((4, 6))
    x[:, 0] = [t, np.nextafter(t, 1), -t, np.nextafter(-t, -1)]
    assert_same_bits(engine.predict(x, "raw").ravel(), booster.predict(x, raw_score=True))


def test_auto_picks_quickscorer_up_to_64_leaves_and_the_node_walk_beyond():
    assert treescore_native.ExactScorer(train("regression").model_to_string()).layout == "quickscorer"
    wide = train("255_leaves_deep").model_to_string()
    assert treescore_native.ExactScorer(wide).layout == "node walk"
    with pytest.raises(ValueError, match="at most 64 leaves without NaN thresholds"):
        treescore_native.ExactScorer(wide, "quickscorer")


@pytest.mark.parametrize("name", LINEAR_SHAPES)
def test_linear_trees_give_lightgbm_bits_in_every_layout_and_simd_level(name):
    """A linear leaf's value, constant plus each coefficient times its feature's value as LightGBM
    reads it (tiny values as +0.0), or the plain leaf value where one of those features is NaN:
    every layout on every SIMD level, iteration ranges, what-if grids over a feature only linear
    leaves may read, and two threads give LightGBM's bits on the fuzz rows."""
    booster = train(name)
    text = booster.model_to_string()
    assert "is_linear=1" in text
    assert any(line.startswith("leaf_coeff=") and line[len("leaf_coeff="):].strip() for line in text.splitlines())
    x = fuzz_rows(booster, LINEAR_SHAPES[name][1], seed=zlib.crc32(name.encode()))
    total = booster.num_trees() // booster.num_model_per_iteration()
    most_leaves = max(tree["num_leaves"] for tree in booster.dump_model()["tree_info"])
    grid_rows, points = x[:300], np.tile(np.concatenate([SPECIAL, [-2.0, 0.7, 3.0]]), (300, 1))[:, :, None]
    for layout in ["node walk"] + (["quickscorer"] if most_leaves <= 64 else []):
        for simd in treescore_native.simd_levels():
            engine = treescore_native.ExactScorer(text, layout, simd)
            for kind, args in (("prediction", {}), ("raw", {"raw_score": True}), ("leaf", {"pred_leaf": True})):
                for start, count in ((0, -1), (1, 2), (total + 5, 2)):
                    expected = booster.predict(x, start_iteration=start, num_iteration=count, **args)
                    got = engine.predict(x, kind, start_iteration=start, num_iterations=count, num_threads=1 + start % 2)
                    assert_same_bits(got.reshape(expected.shape), expected, f"{name} {kind} {layout} on {simd} {start}+{count}")
            for varying in (0, 5):
                point_rows = np.repeat(grid_rows, points.shape[1], axis=0)
                point_rows[:, varying] = points.reshape(-1)
                expected = booster.predict(point_rows)
                got = engine.predict_grid(grid_rows, [varying], points)
                assert_same_bits(got.reshape(expected.shape), expected, f"{name} grid over n{varying} {layout} on {simd}")
            with pytest.raises(ValueError, match="linear trees has no contributions"):
                engine.predict(x[:5], "contrib")


def test_the_engine_refuses_contributions_without_counts():
    import lightgbm as lgb

    rng = np.random.default_rng(1)
    x = rng.normal(size=(2_000, 3))
    plain = lgb.train({"objective": "regression", "verbose": -1}, lgb.Dataset(x, x[:, 0]), 3).model_to_string()
    uncounted = "\n".join(line for line in plain.splitlines() if not line.startswith(("leaf_count=", "internal_count=")))
    engine = treescore_native.ExactScorer(uncounted)
    assert_same_bits(engine.predict(x, "raw"), treescore_native.ExactScorer(plain).predict(x, "raw"))
    with pytest.raises(ValueError, match="training counts"):
        engine.predict(x, "contrib")
