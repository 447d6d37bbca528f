"""Differential fuzzing of treescore's engine on random model texts, which training never makes:
thresholds at +-0, +-inf, LightGBM's zero threshold and its neighbours, every missing type with
either default direction, categorical splits with random bitsets (negative, fractional, huge and
NaN codes in the rows), lopsided trees up to 8, 16, 32, 64 and 100 leaves (both layouts, and
QuickScorer with every width of leaf set and value read) and chains up to 99 deep, one-leaf trees,
multiclass and every objective's transform, features repeated along paths (at most 8 features),
and training counts at random, zeros included, which TreeSHAP divides by. LightGBM loads each
text itself; the engine must give its bits for every output kind, contributions too."""
import os
import zlib

import lightgbm as lgb
import numpy as np
import pytest

from conftest import assert_same_bits
import treescore_native

ZERO_THRESHOLD = float(np.float32(1e-35))
EDGES = [0.0, -0.0, np.inf, -np.inf, ZERO_THRESHOLD, -ZERO_THRESHOLD, np.nextafter(ZERO_THRESHOLD, 1),
         np.nextafter(ZERO_THRESHOLD, 0), 1e-35, 5e-324, -5e-324, 1e300, -1e300]
OBJECTIVES = ["regression", "binary sigmoid:0.7", "poisson", "cross_entropy", "cross_entropy_lambda",
              "regression sqrt", "lambdarank", "multiclass num_class:3", "multiclassova num_class:3 sigmoid:1.3"]


def threshold(rng) -> float:
    return float(rng.choice(EDGES)) if rng.random() < 0.35 else float(np.round(rng.normal(), int(rng.integers(1, 17))))


def random_tree(rng, num_features: int, num_leaves: int, chain: bool):
    """A random binary tree as LightGBM's arrays: split a random leaf until there are num_leaves;
    for a chain, always one of the two newest, so that the deepest leaf is num_leaves - 1 deep
    (past the 64 edges a TreeSHAP pattern holds)."""
    left, right, feature, thresholds, decision, cat_words, cat_bounds = [], [], [], [], [], [], [0]
    leaves = [("root", None)]  # (parent node, side) of each current leaf
    for node in range(num_leaves - 1):
        pick = len(leaves) - 1 - int(rng.integers(min(2, len(leaves)))) if chain else int(rng.integers(len(leaves)))
        parent, side = leaves.pop(pick)
        if parent != "root":
            (left if side == "L" else right)[parent] = node
        left.append(None)
        right.append(None)
        feature.append(int(rng.integers(num_features)))
        if rng.random() < 0.2:  # categorical: a random bitset of 1..4 words
            words = [int(w) for w in rng.integers(0, 2 ** 32, size=int(rng.integers(1, 5)), dtype=np.uint64)]
            thresholds.append(float(len(cat_bounds) - 1))
            cat_words += words
            cat_bounds.append(cat_bounds[-1] + len(words))
            decision.append(1 | (int(rng.integers(0, 3)) << 2))  # missing type ignored, and varied
        else:
            thresholds.append(threshold(rng))
            decision.append((int(rng.integers(0, 2)) << 1) | (int(rng.integers(0, 3)) << 2))
        leaves += [(node, "L"), (node, "R")]
    for index, (parent, side) in enumerate(leaves):
        if parent != "root":
            (left if side == "L" else right)[parent] = ~index
    values = rng.normal(size=num_leaves) * rng.choice([1e-3, 1.0, 30.0])
    return left, right, feature, thresholds, decision, cat_words, cat_bounds, values


def counts(rng, size: int) -> list:
    """Training counts as TreeSHAP reads them: whatever the text says, zeros (0 / 0 is NaN) too."""
    drawn = rng.integers(0, 60, size=size)
    drawn[rng.random(size) < 0.1] = 0
    return [int(c) for c in drawn]


def numbers(values) -> str:
    return " ".join(repr(float(v)) if isinstance(v, float) else str(v) for v in values)


def random_model(seed: int) -> str:
    rng = np.random.default_rng(seed)
    objective = OBJECTIVES[seed % len(OBJECTIVES)]
    classes = 3 if objective.startswith("multiclass") else 1
    num_features = int(rng.integers(1, 9))
    iterations = int(rng.integers(1, 12))
    max_leaves = int(rng.choice([8, 16, 32, 64, 100]))  # QuickScorer: 16 or 32 values read whole, 64-bit sets
    trees = []
    for t in range(iterations * classes):
        n = 1 if rng.random() < 0.05 else int(rng.integers(2, max_leaves + 1))
        if n == 1:
            trees.append(f"Tree={t}\nnum_leaves=1\nnum_cat=0\nsplit_feature=\nsplit_gain=\nthreshold=\n"
                         f"decision_type=\nleft_child=\nright_child=\nleaf_value={rng.normal()!r}\nleaf_weight=\n"
                         "leaf_count=\ninternal_value=\ninternal_weight=\ninternal_count=\nis_linear=0\nshrinkage=1\n")
            continue
        left, right, feature, thresholds, decision, words, bounds, values = random_tree(
            rng, num_features, n, chain=rng.random() < 0.15)
        cats = len(bounds) - 1
        cat_lines = f"cat_boundaries={numbers(bounds)}\ncat_threshold={numbers(words)}\n" if cats else ""
        trees.append(
            f"Tree={t}\nnum_leaves={n}\nnum_cat={cats}\nsplit_feature={numbers(feature)}\n"
            f"split_gain={numbers([1.0] * (n - 1))}\nthreshold={numbers(thresholds)}\n"
            f"decision_type={numbers(decision)}\nleft_child={numbers(left)}\nright_child={numbers(right)}\n"
            f"leaf_value={numbers(list(values))}\nleaf_weight={numbers([1.0] * n)}\nleaf_count={numbers(counts(rng, n))}\n"
            f"internal_value={numbers([0.0] * (n - 1))}\ninternal_weight={numbers([1.0] * (n - 1))}\n"
            f"internal_count={numbers(counts(rng, n - 1))}\n{cat_lines}is_linear=0\nshrinkage=1\n")
    names = " ".join(f"f{i}" for i in range(num_features))
    header = (f"tree\nversion=v4\nnum_class={classes}\nnum_tree_per_iteration={classes}\nlabel_index=0\n"
              f"max_feature_idx={num_features - 1}\nobjective={objective}\n"
              + ("average_output\n" if rng.random() < 0.1 else "")
              + f"feature_names={names}\nfeature_infos={' '.join(['none'] * num_features)}\n\n")
    return header + "\n".join(trees) + "\nend of trees\n\nparameters:\nend of parameters\n"


def random_rows(text: str, seed: int) -> np.ndarray:
    """Rows of special values, every threshold of the model and its neighbours, and odd category codes."""
    rng = np.random.default_rng(seed)
    thresholds = [float(v) for line in text.splitlines() if line.startswith("threshold=") and len(line) > 10
                  for v in line[len("threshold="):].split()]
    pool = np.array(EDGES + [np.nan, -1.0, -0.5, 0.5, 2.9, 31.0, 32.0, 127.0, 2.0 ** 31, -2.0 ** 31 - 1, 3e9]
                    + thresholds + list(np.nextafter(thresholds, np.inf)) + list(np.nextafter(thresholds, -np.inf)))
    features = int(text.split("max_feature_idx=")[1].split()[0]) + 1
    rows = rng.choice(pool, size=(3_000, features))
    ordinary = rng.random(rows.shape) < 0.3
    rows[ordinary] = rng.normal(size=int(ordinary.sum()))
    return rows


# CI runs 300 models; TREESCORE_FUZZ_MODELS=N runs N (the longer runs reported in the notes).
SEEDS = range(int(os.environ.get("TREESCORE_FUZZ_MODELS", "300")))


def comparisons(seed: int) -> int:
    """How many outputs the test below compares for one model (to report fuzzing volume)."""
    text = random_model(seed)
    booster = lgb.Booster(model_str=text)
    x = random_rows(text, seed=0)
    most_leaves = max(int(line[len("num_leaves="):]) for line in text.splitlines() if line.startswith("num_leaves="))
    per_layout = sum(booster.predict(x, **args).size for args in ({}, {"raw_score": True}, {"pred_leaf": True}))
    return per_layout * (2 if most_leaves <= 64 else 1) + booster.predict(x, pred_contrib=True).size


@pytest.mark.parametrize("seed", SEEDS)
def test_random_model_texts_score_like_lightgbm(seed):
    text = random_model(seed)
    booster = lgb.Booster(model_str=text)
    x = random_rows(text, seed=zlib.crc32(text.encode()) & 0xFFFF)
    most_leaves = max(int(line[len("num_leaves="):]) for line in text.splitlines() if line.startswith("num_leaves="))
    layouts = ["node walk"] + (["quickscorer"] if most_leaves <= 64 else [])
    for layout in layouts:
        engine = treescore_native.ExactScorer(text, layout)
        for kind, args in (("prediction", {}), ("raw", {"raw_score": True}), ("leaf", {"pred_leaf": True})):
            expected = booster.predict(x, **args)
            got = engine.predict(x, kind).reshape(expected.shape)
            assert_same_bits(got, expected, f"seed {seed}, {layout}, {kind}")
    # Contributions take no layout: TreeSHAP walks the model's own nodes.
    expected = booster.predict(x, pred_contrib=True)
    got = treescore_native.ExactScorer(text).predict(x, "contrib").reshape(expected.shape)
    assert_same_bits(got, expected, f"seed {seed}, contrib")


@pytest.mark.parametrize("seed", SEEDS)
def test_random_model_grids_score_each_point_like_lightgbm(seed):
    """What-if grids share the work on features that do not vary; every point must still have
    LightGBM's bits for its own row. One or two features vary; the points take the same special
    values, thresholds and neighbours as the rows."""
    text = random_model(seed)
    booster = lgb.Booster(model_str=text)
    rng = np.random.default_rng(seed)
    pool = random_rows(text, seed=zlib.crc32(text.encode()) & 0xFFFF)
    base, features = pool[:200], pool.shape[1]
    varying = [int(f) for f in rng.permutation(features)[:int(rng.integers(1, min(2, features) + 1))]]
    points = int(rng.choice([1, 5, 15]))
    values = rng.choice(pool[:, varying].ravel(), size=(len(base), points, len(varying)))
    rows = np.repeat(base, points, axis=0)
    rows[:, varying] = values.reshape(-1, len(varying))
    most_leaves = max(int(line[len("num_leaves="):]) for line in text.splitlines() if line.startswith("num_leaves="))
    for layout in ["node walk"] + (["quickscorer"] if most_leaves <= 64 else []):
        engine = treescore_native.ExactScorer(text, layout)
        for kind, args in (("prediction", {}), ("raw", {"raw_score": True})):
            expected = booster.predict(rows, **args)
            got = engine.predict_grid(base, varying, values, kind, num_threads=1 + seed % 2).reshape(expected.shape)
            assert_same_bits(got, expected, f"seed {seed}, {layout}, {kind}, varying {varying}, {points} points")
