"""python -m bench.bound_study [--rows N]: how tight exact top-K bounds can get on the benchmark's model.

Exact top-K selection (docs/top-k.md) drops a row once an upper bound on its final score falls
below the k-th best exact score so far. This offline study takes the benchmark's 300-tree
regressor (the top-K section's model), rows drawn as its table's are and the top-K section's
bar (the top 1,000 of 2,000,000: the same share of N rows), and counts what bounds of several
kinds keep:

1. the bound for any row after the first E trees (partial sum plus the largest leaf of every
   tree left), the trees taken in order and by leaf spread, largest first;
2. the share of trees an ideal schedule evaluates: each row dropped right after the tree whose
   bound first rules it out, with no cost per stage;
3. every tree's reach conditioned on the row's values of the m features that most nodes split
   on, before any tree is evaluated in full, and the share of nodes on those features (what a
   feature-by-feature scorer pays to read them);
4. the bound for any row by groups of 4 consecutive trees taken jointly (the best sum of leaves
   whose regions intersect), against the sum of their largest leaves;
5. every tree's reach conditioned on the row's value of the one feature the selector's bins
   condition it on (rest_bounds.h), before any tree is evaluated: whether a bound of that kind
   could spare the first stage some of its rows.

Nothing here is timed; it says how many rows and trees a bound leaves, which bench/topk.py's
timings turn into seconds.
"""
import argparse
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np

# LightGBM's kZeroThreshold: the float literal 1e-35f widened to double.
ZERO_THRESHOLD = float(np.float32(1e-35))
TOP_SHARE = 1_000 / 2_000_000  # the top-K section's k over its rows


@dataclass
class Node:
    feature: int
    categorical: bool
    threshold: float          # numerical nodes
    categories: frozenset     # categorical nodes: the categories that go left
    missing: str              # "None", "Zero" or "NaN"
    default_left: bool


@dataclass
class Leaf:
    index: int  # LightGBM's leaf index, as pred_leaf gives it
    value: float
    path: List[Tuple[Node, bool]]  # the nodes from the root, and whether the leaf is left of each


def trees_of(booster) -> List[List[Leaf]]:
    """Every tree's leaves, in tree order, each with its path, from LightGBM's JSON dump."""
    trees = []
    for info in booster.dump_model()["tree_info"]:
        leaves: List[Leaf] = []
        stack = [(info["tree_structure"], [])]
        while stack:
            node, path = stack.pop()
            if "leaf_value" in node:
                leaves.append(Leaf(int(node.get("leaf_index", 0)), float(node["leaf_value"]), path))  # a one-leaf tree has no index
                continue
            categorical = node["decision_type"] == "=="
            parsed = Node(int(node["split_feature"]), categorical,
                          0.0 if categorical else float(node["threshold"]),
                          frozenset(int(c) for c in str(node["threshold"]).split("||")) if categorical else frozenset(),
                          node["missing_type"], bool(node["default_left"]))
            stack.append((node["right_child"], path + [(parsed, False)]))
            stack.append((node["left_child"], path + [(parsed, True)]))
        trees.append(leaves)
    return trees


def goes_left(node: Node, column: np.ndarray) -> np.ndarray:
    """Which rows LightGBM sends left at `node`, given the rows' values of its feature."""
    x = np.where(np.abs(column) <= ZERO_THRESHOLD, 0.0, column)  # the C API reads these as +0.0
    nan = np.isnan(x)
    if node.categorical:  # NaN, negatives and values beyond int's range go right
        inside = ~nan & (x > -1.0) & (x < 2147483648.0)
        codes = np.where(inside, np.trunc(np.where(inside, x, 0.0)), -1).astype(np.int64)
        return inside & np.isin(codes, sorted(node.categories))
    if node.missing != "NaN":
        x = np.where(nan, 0.0, x)
    left = x <= node.threshold
    if node.missing == "Zero":
        return np.where(x == 0.0, node.default_left, left)
    if node.missing == "NaN":
        return np.where(nan, node.default_left, left)
    return left


def leaf_values(booster, trees: List[List[Leaf]], x: np.ndarray) -> np.ndarray:
    """rows x trees: the leaf value each of booster's trees (`trees`, as trees_of gives them) adds
    to each row's raw score, at the leaf LightGBM's own predictor finds."""
    reached = booster.predict(x, pred_leaf=True).reshape(len(x), -1)
    values = []
    for t, leaves in enumerate(trees):
        by_index = np.empty(len(leaves))
        by_index[[leaf.index for leaf in leaves]] = [leaf.value for leaf in leaves]
        values.append(by_index[reached[:, t]])
    return np.stack(values, axis=1)


def largest_leaves(trees: List[List[Leaf]]) -> np.ndarray:
    """Per tree, its largest leaf value: what it adds at most to any row."""
    return np.array([max(leaf.value for leaf in leaves) for leaves in trees])


def kept_after(values: np.ndarray, largest: np.ndarray, order: Sequence[int], evaluated: int, bar: float) -> float:
    """The share of rows whose bound for any row reaches `bar` after the first `evaluated` trees of `order`."""
    order = np.asarray(order)
    upper = values[:, order[:evaluated]].sum(axis=1) + largest[order[evaluated:]].sum()
    return float(np.mean(upper >= bar))


def ideal_tree_share(values: np.ndarray, largest: np.ndarray, bar: float) -> float:
    """The share of trees evaluated when each row stops right after the tree whose bound rules it out."""
    partial = np.cumsum(values, axis=1)
    rest = np.concatenate([np.cumsum(largest[::-1])[::-1][1:], [0.0]])
    out = partial + rest < bar
    used = np.where(out.any(axis=1), np.argmax(out, axis=1) + 1, values.shape[1])
    return float(used.mean() / values.shape[1])


def conditioned_largest(trees: List[List[Leaf]], x: np.ndarray, features: set) -> np.ndarray:
    """rows x trees: the largest leaf each tree can reach given the row's values of `features`
    (every other feature free): the leaves whose path agrees with the row at every node on them."""
    out = np.empty((len(x), len(trees)))
    for t, leaves in enumerate(trees):
        decided = {}
        best = np.full(len(x), -np.inf)
        for leaf in leaves:
            reachable = np.ones(len(x), dtype=bool)
            for node, left in leaf.path:
                if node.feature not in features:
                    continue
                key = id(node)
                if key not in decided:
                    decided[key] = goes_left(node, x[:, node.feature])
                reachable &= decided[key] if left else ~decided[key]
            best = np.where(reachable, np.maximum(best, leaf.value), best)
        out[:, t] = best
    return out


def first_split_features(trees: List[List[Leaf]], wanted: Optional[set] = None) -> List[Optional[int]]:
    """Per tree, the feature of its first numerical node breadth first (among `wanted`, if given),
    or None: how rest_bounds.cpp picks the feature a tree is conditioned on. A leaf's path lists
    its nodes from the root and trees_of yields leaves left to right, so the first leaf whose path
    reaches a qualifying node at the least depth reaches the first such node breadth first."""
    out: List[Optional[int]] = []
    for leaves in trees:
        best: Optional[Tuple[int, int]] = None  # (depth, feature)
        for leaf in leaves:
            depth, node = next(((d, n) for d, (n, _) in enumerate(leaf.path)
                                if not n.categorical and (wanted is None or n.feature in wanted)), (None, None))
            if node is not None and (best is None or depth < best[0]):
                best = (depth, node.feature)
        out.append(None if best is None else best[1])
    return out


def binned_largest(trees: List[List[Leaf]], x: np.ndarray, m: int) -> np.ndarray:
    """rows x trees: the largest leaf each tree can reach given the row's value of the one feature
    it is conditioned on, chosen as the selector chooses it among the m features most trees start
    with (its largest leaf where it splits on none). Exact conditioning: the selector's bins, which
    send NaN and zeros to a bin that reaches every leaf, are never tighter."""
    starts: dict = {}
    for f in first_split_features(trees):
        if f is not None:
            starts[f] = starts.get(f, 0) + 1
    chosen = set(sorted(starts, key=lambda f: (-starts[f], f))[:m])
    largest = largest_leaves(trees)
    out = np.empty((len(x), len(trees)))
    for t, f in enumerate(first_split_features(trees, chosen)):
        out[:, t] = largest[t] if f is None else conditioned_largest(trees[t:t + 1], x, {f})[:, 0]
    return out


def _regions(leaves: List[Leaf], features: List[int]):
    """Each leaf's region over `features`: (lo, hi] per feature and whether NaN reaches it. Nodes
    whose region is not an interval (categorical, missing type Zero) constrain nothing here, which
    only makes regions larger, so the joint bound stays a bound."""
    column = {f: i for i, f in enumerate(features)}
    lo = np.full((len(leaves), len(features)), -np.inf)
    hi = np.full((len(leaves), len(features)), np.inf)
    nan = np.ones((len(leaves), len(features)), dtype=bool)
    for i, leaf in enumerate(leaves):
        for node, left in leaf.path:
            if node.categorical or node.missing == "Zero":
                continue
            j = column[node.feature]
            nan_left = node.default_left if node.missing == "NaN" else 0.0 <= node.threshold  # None: NaN reads as 0
            if left:
                hi[i, j] = min(hi[i, j], node.threshold)
            else:
                lo[i, j] = max(lo[i, j], node.threshold)
            nan[i, j] &= nan_left if left else not nan_left
    return np.array([leaf.value for leaf in leaves]), lo, hi, nan


def joint_largest(trees: List[List[Leaf]]) -> float:
    """An upper bound on the trees' summed output for any row: the largest sum of one leaf per tree
    whose regions intersect (every pair of leaves merged, tree after tree)."""
    features = sorted({node.feature for leaves in trees for leaf in leaves for node, _ in leaf.path})
    value, lo, hi, nan = _regions(trees[0], features)
    for leaves in trees[1:]:
        v, l, h, n = _regions(leaves, features)
        lo2, hi2 = np.maximum(lo[:, None], l[None]), np.minimum(hi[:, None], h[None])
        nan2 = nan[:, None] & n[None]
        meets = np.all((lo2 < hi2) | nan2, axis=2)
        value, lo, hi, nan = (value[:, None] + v[None])[meets], lo2[meets], hi2[meets], nan2[meets]
    return float(value.max())


def node_counts(trees: List[List[Leaf]]) -> dict:
    """feature -> how many nodes split on it."""
    counts: dict = {}
    for leaves in trees:
        seen = set()
        for leaf in leaves:
            for node, _ in leaf.path:
                if id(node) not in seen:
                    seen.add(id(node))
                    counts[node.feature] = counts.get(node.feature, 0) + 1
    return counts


def study(booster, x: np.ndarray, print_line=print) -> None:
    trees = trees_of(booster)
    values = leaf_values(booster, trees, x)
    scores = values.sum(axis=1)
    k = max(1, int(round(len(x) * TOP_SHARE)))
    bar = np.sort(scores)[-k]
    largest = largest_leaves(trees)
    smallest = np.array([min(leaf.value for leaf in leaves) for leaves in trees])
    by_spread = np.argsort(-(largest - smallest), kind="stable")
    print_line(f"{len(x):,} rows, {len(trees)} trees, the bar at the top {k:,} (the top {TOP_SHARE:.2%})")
    print_line("1. rows kept by the bound for any row after E trees: in order / by leaf spread")
    for evaluated in (20, 40, 60, 90):
        if evaluated < len(trees):
            print_line(f"   E={evaluated}: {kept_after(values, largest, range(len(trees)), evaluated, bar):.2%} / "
                       f"{kept_after(values, largest, by_spread, evaluated, bar):.2%}")
    print_line(f"2. trees an ideal schedule evaluates: {ideal_tree_share(values, largest, bar):.1%} of a full score's")
    counts = node_counts(trees)
    ranked = sorted(counts, key=lambda f: (-counts[f], f))
    print_line("3. rows kept with every tree conditioned on the row's m most split-on features, no tree evaluated")
    for m in (8, 16, 32):
        chosen = set(ranked[:m])
        kept = float(np.mean(conditioned_largest(trees, x, chosen).sum(axis=1) >= bar))
        share = sum(counts[f] for f in chosen) / sum(counts.values())
        print_line(f"   m={m}: {kept:.2%} of rows kept; those features hold {share:.0%} of the nodes")
    print_line("4. the bound for any row on the trees after E: sum of largest leaves / groups of 4 trees jointly")
    for evaluated in (60, 120):
        if evaluated + 4 <= len(trees):
            joint = sum(joint_largest(trees[g:g + 4]) for g in range(evaluated, len(trees), 4))
            print_line(f"   E={evaluated}: {largest[evaluated:].sum():.4f} / {joint:.4f}")
    print_line("5. rows kept before any tree is evaluated, each tree conditioned on its one binned feature, "
               "chosen among the m features most trees start with")
    for m in (8, 16, 32):
        print_line(f"   m={m}: {np.mean(binned_largest(trees, x, m).sum(axis=1) >= bar):.2%} of rows kept")


def main(argv=None) -> None:
    import lightgbm as lgb

    from bench import data, models
    from bench.config import FULL

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args(argv)
    text = models.load_or_train(FULL).texts[0]
    study(lgb.Booster(model_str=text), data.features(args.rows, FULL.features, seed=1000))


if __name__ == "__main__":
    main()
