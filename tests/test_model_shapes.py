"""Every shape of model LightGBM trains loads in treescore and scores bit for bit like
Booster.predict: every objective, rf/dart/goss, monotone constraints, 2 to 255 leaves,
categorical features with up to 1,000 categories, zero_as_missing and use_missing=false.
Linear trees too (LINEAR_SHAPES, fuzzed in test_engine_fuzz.py).

The rows scored are not just training-like: they hold NaN, nulls, +-0, +-inf, values either
side of LightGBM's zero threshold, every split threshold and its neighbours one ulp away, and
categorical codes that are negative, fractional, huge, unseen or NaN."""
import lightgbm as lgb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import treescore
from conftest import assert_same_bits, collect, plan_of, thresholds

NUMERIC = [f"n{i}" for i in range(6)]
ROWS = 6_000
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-35, -1e-35, 1.0000001e-35, 9.99e-36, 5e-324, -1e-300]


def make_rows(rows: int, categories: int, seed: int) -> np.ndarray:
    """Numeric features with NaN and exact zeros, then a categorical code column if `categories`."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, len(NUMERIC)))
    x[rng.random(x.shape) < 0.04] = 0.0
    x[rng.random(x.shape) < 0.03] = np.nan
    if categories:
        codes = rng.integers(0, categories, size=rows).astype(np.float64)
        codes[rng.random(rows) < 0.02] = np.nan
        x = np.column_stack([x, codes])
    return x


def label(x: np.ndarray, objective: str, categories: int, rng) -> np.ndarray:
    s = np.nan_to_num(x[:, :len(NUMERIC)])
    y = 1.5 * s[:, 0] - s[:, 1] ** 2 + np.sin(2 * s[:, 2]) + s[:, 3] * s[:, 4]
    if categories:  # a random effect per category, so splits send scattered codes left
        effect = np.random.default_rng(99).normal(size=categories) * 2
        codes = x[:, -1]
        y = y + np.where(np.isnan(codes), 0.0, effect[np.nan_to_num(codes).astype(int)])
    y = y + rng.normal(scale=0.3, size=len(y))
    if objective in ("binary", "cross_entropy", "cross_entropy_lambda"):
        return (y > np.median(y)).astype(float)
    if objective in ("multiclass", "multiclassova"):
        return np.digitize(y, np.quantile(y, [0.25, 0.5, 0.75])).astype(float)
    if objective in ("lambdarank", "rank_xendcg"):
        return np.digitize(y, np.quantile(y, [0.5, 0.8, 0.95])).astype(float)
    if objective in ("poisson", "gamma", "tweedie"):
        return np.exp(y / 4)
    return y


# name: (training params, categories of the categorical column, rounds)
SHAPES = {
    **{objective: ({"objective": objective}, 0, 20) for objective in [
        "regression", "regression_l1", "huber", "fair", "poisson", "quantile", "mape", "gamma", "tweedie",
        "binary", "cross_entropy", "cross_entropy_lambda", "lambdarank", "rank_xendcg"]},
    "multiclass": ({"objective": "multiclass", "num_class": 4}, 0, 15),
    "multiclassova": ({"objective": "multiclassova", "num_class": 4}, 0, 15),
    "binary_sigmoid_0.7": ({"objective": "binary", "sigmoid": 0.7}, 0, 20),
    "rf": ({"objective": "regression", "boosting": "rf", "bagging_freq": 1, "bagging_fraction": 0.6,
            "feature_fraction": 0.8}, 0, 20),
    "rf_multiclass": ({"objective": "multiclass", "num_class": 4, "boosting": "rf", "bagging_freq": 1,
                       "bagging_fraction": 0.6}, 0, 10),
    "dart": ({"objective": "binary", "boosting": "dart", "drop_rate": 0.3, "skip_drop": 0.2}, 0, 30),
    "goss": ({"objective": "regression", "data_sample_strategy": "goss", "learning_rate": 0.3}, 0, 30),
    "monotone": ({"objective": "regression", "monotone_constraints": [1, -1, 0, 1, 0, -1],
                  "monotone_constraints_method": "advanced"}, 0, 20),
    "2_leaves": ({"objective": "regression", "num_leaves": 2}, 0, 30),
    "64_leaves": ({"objective": "regression", "num_leaves": 64, "min_data_in_leaf": 5}, 0, 10),
    "255_leaves_deep": ({"objective": "regression", "num_leaves": 255, "min_data_in_leaf": 2,
                         "max_depth": -1}, 0, 8),
    "zero_as_missing": ({"objective": "regression", "zero_as_missing": True}, 0, 20),
    "use_missing_false": ({"objective": "regression", "use_missing": False}, 0, 20),
    "categorical_40": ({"objective": "regression"}, 40, 20),
    "categorical_200": ({"objective": "binary"}, 200, 20),
    "categorical_1000": ({"objective": "regression", "max_cat_threshold": 256, "max_bin": 1023,
                          "max_bin_by_feature": [255] * 6 + [1023]}, 1000, 15),
    "categorical_multiclass": ({"objective": "multiclass", "num_class": 4}, 120, 10),
}


# Models with linear trees (linear_tree=true), which have no contributions: leaves reading up to
# every numerical feature, categorical splits beside them, use_missing=false (LightGBM refuses
# zero_as_missing with them), several classes, and
# trees wide enough for each layout (QuickScorer's 32- and 64-bit leaf sets, the node walk).
LINEAR_SHAPES = {
    "linear_regression": ({"objective": "regression", "linear_tree": True}, 0, 10),
    "linear_binary_categorical": ({"objective": "binary", "linear_tree": True, "linear_lambda": 0.1}, 40, 10),
    "linear_multiclass_use_missing_false": ({"objective": "multiclass", "num_class": 4, "linear_tree": True,
                                             "use_missing": False}, 0, 6),
    "linear_64_leaves": ({"objective": "regression", "linear_tree": True, "num_leaves": 64,
                          "min_data_in_leaf": 20}, 0, 5),
    "linear_100_leaves": ({"objective": "poisson", "linear_tree": True, "num_leaves": 100,
                           "min_data_in_leaf": 20}, 0, 4),
}


# The shapes with one output per row: every objective but the multiclass ones, and rf, dart, goss,
# deep trees and categoricals.
SINGLE_OUTPUT_SHAPES = [name for name, (params, _, _) in SHAPES.items() if "num_class" not in params]


def train(name: str):
    params, categories, rounds = {**SHAPES, **LINEAR_SHAPES}[name]
    x = make_rows(20_000 if categories >= 1000 else 8_000, categories, seed=1)
    rng = np.random.default_rng(2)
    y = label(x, params["objective"], categories, rng)
    names = NUMERIC + (["cat"] if categories else [])
    full = {"verbose": -1, "num_threads": 1, "seed": 3, "num_leaves": 31, "min_data_per_group": 5,
            "cat_smooth": 1, "cat_l2": 1, "max_cat_to_onehot": 4, **params}
    extra = {"categorical_feature": ["cat"]} if categories else {}
    if params["objective"] in ("lambdarank", "rank_xendcg"):
        extra["group"] = [40] * (len(x) // 40)
    return lgb.train(full, lgb.Dataset(x, y, feature_name=names, **extra), rounds)


def scoring_rows(booster, categories: int) -> np.ndarray:
    """Training-like rows, then special values, thresholds one ulp either side, and odd codes."""
    x = make_rows(ROWS, categories, seed=4)
    row = 0
    for j in range(len(NUMERIC)):
        x[row:row + len(SPECIAL), j] = SPECIAL
        row += len(SPECIAL)
    for j, values in thresholds(booster).items():
        if j >= len(NUMERIC):
            continue
        for t in sorted(values):
            for v in (np.nextafter(t, -np.inf), t, np.nextafter(t, np.inf)):
                x[row % ROWS, j] = v
                row += 1
    if categories:
        odd = [-1, -0.99, -0.0, 0.0, 0.5, 30.999, 31, 32, 63, 64, categories - 1, categories, categories + 7,
               2 ** 31, 3e9, 1e300, np.inf, -np.inf, np.nan]
        x[ROWS - len(odd):, -1] = odd
    return x


def write_rows(folder, name: str, x: np.ndarray, nulls: np.ndarray) -> str:
    names = NUMERIC + (["cat"] if x.shape[1] > len(NUMERIC) else [])
    table = {"id": pa.array(np.arange(len(x), dtype=np.int64))}
    table.update({n: pa.array(x[:, j], mask=nulls[:, j]) for j, n in enumerate(names)})
    path = str(folder / f"{name}.parquet")
    pq.write_table(pa.table(table), path)
    return path


@pytest.mark.parametrize("name", list(SHAPES))
def test_every_model_shape_loads_and_scores_bit_for_bit(spark, tmp_path, name):
    booster = train(name)
    categories = SHAPES[name][1]
    x = scoring_rows(booster, categories)
    nulls = np.random.default_rng(5).random(x.shape) < 0.01
    path = write_rows(tmp_path, name, x, nulls)
    model = treescore.Model.from_booster(booster)  # raised InvalidModelError for wide categoricals
    scored = spark.read.parquet(path).select(
        "id", treescore.score(model).alias("p"), treescore.score(model, kind="raw").alias("r"))
    assert "BatchScore" in plan_of(scored)
    expected_input = np.where(nulls, np.nan, x)  # what lightgbm sees: nulls are NaN
    assert_same_bits(collect(scored, "p"), booster.predict(expected_input))
    assert_same_bits(collect(scored, "r"), booster.predict(expected_input, raw_score=True))


def cat_threshold_words(booster) -> list:
    words = []
    for line in booster.model_to_string().splitlines():
        if line.startswith("cat_threshold="):
            words += [int(w) for w in line.split("=", 1)[1].split()]
    return words


@pytest.mark.parametrize("name", ["categorical_40", "categorical_200", "categorical_1000"])
def test_wide_categorical_models_really_have_bitset_words_with_the_top_bit_set(name):
    """The reason the shapes above matter: category 31, 63, ... on the left of a split sets a
    word's bit 31, so the word is 2^31 or more and does not fit a signed int."""
    words = cat_threshold_words(train(name))
    assert max(words) >= 2 ** 31, f"{name}: no cat_threshold word has bit 31 set; the test data lost its point"


def linear_booster():
    x = make_rows(4_000, 0, seed=6)
    y = label(x, "regression", 0, np.random.default_rng(7))
    return lgb.train({"objective": "regression", "linear_tree": True, "verbose": -1, "num_threads": 1},
                     lgb.Dataset(x, y, feature_name=NUMERIC), 5)


def test_linear_trees_score_on_treescores_engine_bit_for_bit(spark, tmp_path):
    """A linear model's predictions and raw scores on treescore's engine, in Spark, against
    Booster.predict; LightGBM's engine gives the same bits; contributions, which LightGBM does
    not define for linear trees, are refused on the driver."""
    booster = linear_booster()
    text = booster.model_to_string()
    assert "is_linear=1" in text
    assert any(line.startswith("leaf_coeff=") and line[len("leaf_coeff="):].strip() for line in text.splitlines())
    x = scoring_rows(booster, 0)
    nulls = np.random.default_rng(5).random(x.shape) < 0.01
    expected_input = np.where(nulls, np.nan, x)
    model = treescore.Model.from_booster(booster)
    assert model.engine() == "treescore"
    rows = spark.read.parquet(write_rows(tmp_path, "linear", x, nulls))
    for engine in ("treescore", "lightgbm"):
        spark.conf.set("spark.treescore.engine", engine)
        try:
            scored = rows.select("id", treescore.score(model).alias("p"), treescore.score(model, kind="raw").alias("r"))
            assert f"on the {engine} engine" in plan_of(scored)
            assert_same_bits(collect(scored, "p"), booster.predict(expected_input))
            assert_same_bits(collect(scored, "r"), booster.predict(expected_input, raw_score=True))
            with pytest.raises(Exception, match="has linear trees, for which LightGBM defines no contributions"):
                rows.select(treescore.score(model, kind="contrib"))
        finally:
            spark.conf.unset("spark.treescore.engine")


@pytest.mark.parametrize("field, damage, problem", [
    ("leaf_features", lambda tokens: ["99"] + tokens[1:], "leaf feature 99, outside 0..5"),
    ("leaf_coeff", lambda tokens: tokens[:-1], "values in leaf_coeff, expected"),
    ("num_features", lambda tokens: ["-1"] + tokens[1:], "num_features -1"),
])
def test_damaged_linear_leaves_are_refused_before_lightgbm_reads_them(field, damage, problem):
    lines = linear_booster().model_to_string().splitlines()
    # the first tree whose leaf_features is not empty: every field of its linear leaves has entries
    tree = next(i for i, line in enumerate(lines) if line.startswith("leaf_features=") and line[14:].strip())
    start = max(i for i in range(tree) if lines[i].startswith("Tree="))
    at = next(i for i in range(start, len(lines)) if lines[i].startswith(field + "="))
    key, value = lines[at].split("=", 1)
    lines[at] = f"{key}={' '.join(damage(value.split()))}"
    with pytest.raises(treescore.InvalidModelError, match=problem):
        treescore.Model.from_string("\n".join(lines) + "\n")


def test_the_fixture_collect_helper_orders_and_stacks(spark):
    """collect() (shared in conftest) must order by id and stack arrays; a wrong order would hide mismatches."""
    df = spark.createDataFrame([(2, [1.0, 2.0]), (1, [3.0, 4.0])], ["id", "s"])
    assert_same_bits(collect(df), np.array([[3.0, 4.0], [1.0, 2.0]]))
