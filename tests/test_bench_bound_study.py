"""bench/bound_study.py's measures are only worth what its tree logic is: the decisions must be
LightGBM's own, and every bound must hold for every row."""
import lightgbm as lgb
import numpy as np
import pytest

from bench import bound_study
from conftest import assert_same_bits


@pytest.fixture(scope="module", params=[False, True], ids=["nan_missing", "zero_missing"])
def model_and_rows(request):
    rng = np.random.default_rng(5)
    rows = 4_000
    x = rng.normal(size=(rows, 6))
    x[:, 5] = rng.integers(0, 40, size=rows)  # categorical, many codes
    x[rng.random(rows) < 0.1, 0] = np.nan
    x[rng.random(rows) < 0.2, 1] = 0.0
    y = x[:, 1] - np.nan_to_num(x[:, 0]) ** 2 + (x[:, 5] % 7 == 3) * 2.0 + rng.normal(scale=0.3, size=rows)
    params = {"objective": "regression", "num_leaves": 15, "learning_rate": 0.3, "min_data_in_leaf": 5,
              "verbose": -1, "num_threads": 1, "seed": 3, "zero_as_missing": request.param}
    booster = lgb.train(params, lgb.Dataset(x, y, categorical_feature=[5]), 24)
    test = rng.normal(size=(2_000, 6))
    test[:, 5] = rng.integers(-2, 45, size=2_000).astype(float)
    test[::9, 0] = np.nan
    test[::5, 1] = 0.0
    test[::11, 2] = 1e-36  # read as zero by LightGBM
    test[::13, 5] = np.nan
    test[::7, 2] = -0.0
    test[::17, 3] = np.inf
    test[::19, 4] = -np.inf
    test[::23, 5] = np.inf  # beyond int's range: right at every categorical node
    test[::29, 5] = 3e9
    # Values on every threshold and one ulp either side, where `<=` and `<` part ways.
    for node in (n for leaves in bound_study.trees_of(booster) for leaf in leaves for n, _ in leaf.path):
        if not node.categorical:
            near = [node.threshold, np.nextafter(node.threshold, -np.inf), np.nextafter(node.threshold, np.inf)]
            test = np.vstack([test, test[:3]])
            test[-3:, node.feature] = near
    return booster, test


def test_leaf_values_sum_to_lightgbms_raw_score(model_and_rows):
    booster, x = model_and_rows
    summed = np.zeros(len(x))
    for column in bound_study.leaf_values(booster, bound_study.trees_of(booster), x).T:  # the left fold LightGBM sums
        summed = summed + column
    assert_same_bits(summed, booster.predict(x, raw_score=True), "raw scores")


def test_conditioning_on_every_feature_finds_the_leaf_each_row_reaches(model_and_rows):
    booster, x = model_and_rows
    trees = bound_study.trees_of(booster)
    reached = bound_study.conditioned_largest(trees, x, set(range(x.shape[1])))
    assert_same_bits(reached, bound_study.leaf_values(booster, trees, x), "leaf values")


def test_conditioning_on_some_features_bounds_every_rows_leaf(model_and_rows):
    booster, x = model_and_rows
    trees = bound_study.trees_of(booster)
    values = bound_study.leaf_values(booster, trees, x)
    largest = bound_study.largest_leaves(trees)
    some = bound_study.conditioned_largest(trees, x, {1, 5})
    assert np.all(some >= values) and np.all(some <= largest)
    assert np.any(some < largest)  # the condition narrows something


def test_the_joint_bound_holds_and_is_no_looser_than_the_largest_leaves(model_and_rows):
    booster, x = model_and_rows
    trees = bound_study.trees_of(booster)
    values = bound_study.leaf_values(booster, trees, x)
    largest = bound_study.largest_leaves(trees)
    for first in range(0, len(trees), 4):
        group = trees[first:first + 4]
        joint = bound_study.joint_largest(group)
        assert values[:, first:first + 4].sum(axis=1).max() <= joint
        assert joint <= largest[first:first + 4].sum() + 1e-12  # summed in another order: rounding apart


def test_rows_kept_shrink_as_trees_are_evaluated(model_and_rows):
    booster, x = model_and_rows
    values = bound_study.leaf_values(booster, bound_study.trees_of(booster), x)
    largest = values.max(axis=0) + 1.0  # looser than the trees' largest leaves, still a bound
    bar = np.sort(values.sum(axis=1))[-20]
    kept = [bound_study.kept_after(values, largest, range(values.shape[1]), e, bar) for e in (0, 6, 12, 24)]
    assert kept[0] == 1.0 and kept[-1] == pytest.approx(20 / len(x))
    assert all(a >= b for a, b in zip(kept, kept[1:]))
    assert 0 < bound_study.ideal_tree_share(values, largest, bar) < 1


def _first_numerical_breadth_first(booster, wanted=None):
    """The dump's nodes walked breadth first, as rest_bounds.cpp walks a tree: per tree, the first
    numerical node's feature (among `wanted`, if given), or None."""
    out = []
    for info in booster.dump_model()["tree_info"]:
        queue, found = [info["tree_structure"]], None
        while queue and found is None:
            node = queue.pop(0)
            if "leaf_value" in node:
                continue
            if node["decision_type"] != "==" and (wanted is None or node["split_feature"] in wanted):
                found = node["split_feature"]
            queue += [node["left_child"], node["right_child"]]
        out.append(found)
    return out


def test_each_tree_is_conditioned_on_its_first_numerical_feature_breadth_first(model_and_rows):
    booster, _ = model_and_rows
    trees = bound_study.trees_of(booster)
    assert bound_study.first_split_features(trees) == _first_numerical_breadth_first(booster)
    for wanted in ({0}, {2, 3}, {4}):
        assert bound_study.first_split_features(trees, wanted) == _first_numerical_breadth_first(booster, wanted)


def test_the_binned_bound_holds_for_every_row_and_tightens_some(model_and_rows):
    booster, x = model_and_rows
    trees = bound_study.trees_of(booster)
    values = bound_study.leaf_values(booster, trees, x)
    largest = bound_study.largest_leaves(trees)
    for m in (1, 2, 6):
        binned = bound_study.binned_largest(trees, x, m)
        assert np.all(binned >= values), f"m={m}: a tree reached a leaf above its bound"
        assert np.all(binned <= largest)
        assert np.any(binned < largest), f"m={m}: conditioning tightened no tree for any row"


def test_the_binned_bound_reads_only_each_trees_own_feature(model_and_rows):
    booster, x = model_and_rows
    trees = bound_study.trees_of(booster)
    # With every feature allowed, each tree is conditioned on its first numerical feature.
    assigned = np.array([-1 if f is None else f for f in _first_numerical_breadth_first(booster)])
    before = bound_study.binned_largest(trees, x, x.shape[1])
    changed = 0
    for f in range(x.shape[1]):
        other = x.copy()
        other[:, f] = np.random.default_rng(f).permutation(other[:, f])
        after = bound_study.binned_largest(trees, other, x.shape[1])
        assert_same_bits(after[:, assigned != f], before[:, assigned != f], f"trees not conditioned on feature {f}")
        changed += int(np.any(after[:, assigned == f] != before[:, assigned == f]))
    assert changed >= 2, "permuting a tree's own feature changed no tree's bound"
