"""The top-K section: the top_k rows (topk_k of topk_rows) by the ensemble's first member,
a 300-tree regressor, over cached rows of the benchmark's table, in the same run:

- "full": every row scored, then Spark's sort keeps the best (spark.treescore.topK.enabled=false);
- "selected": the same query with treescore's exact top-K selection (the default);
- "one_tree": the same query over the member's first tree alone, scored in full: what the query
  costs besides its trees (the cache read, the features written, the sort), which no selection
  of trees saves, so "full" over "one_tree" bounds the speed-up any selection can reach;
- "approximate": treescore.top_k with a cheap model (20 trees x 15 leaves on the member's 10
  features of the highest gain, trained on the member's own predictions of other rows) whose
  oversample x k best rows are the candidates the member ranks;
- "ensemble_full" and "ensemble_selected": the same query by the benchmark's whole ensemble (a
  treescore.Ensemble of its three members with their weights, combined by sum), scored in full
  then sorted, and with exact selection;
- "route_full" and "route_selected": the same query by a treescore.Routed on id % 3 to the three
  members, so each row is scored by one of them, in full then sorted, and with exact selection.

Then the rows: "selected" must give the same rows and score bits as "full", and both must be
the top k of lightgbm's Booster.predict over every row (ties with the k-th allowed either way);
the same for the ensemble against its members' Booster.predict combined in member order, and for
the route against the member each row's key picks; for
"approximate", the share of the exact top k it found and the rows it filtered.
"""
import numpy as np

from bench import data, session
from bench.config import CORES

WORKLOAD = "topk"
OVERSAMPLE = 10
CHEAP_TREES, CHEAP_LEAVES, CHEAP_FEATURES, CHEAP_TRAIN_ROWS = 20, 15, 10, 50_000
METHODS = {"full": "every row scored, then sorted (topK.enabled=false)",
           "selected": "exact top-K selection (the default)",
           "one_tree": "the query's fixed part: one tree, every row scored, then sorted",
           "approximate": f"top_k with a cheap model, oversample {OVERSAMPLE}",
           "ensemble_full": "the ensemble (3 members, weighted sum): every row scored, then sorted",
           "ensemble_selected": "the ensemble: exact top-K selection",
           "route_full": "a route on id % 3 to the 3 members: every row scored, then sorted",
           "route_selected": "the route: exact top-K selection"}


def top_k(bench) -> None:
    import lightgbm as lgb
    from pyspark.sql import functions as F

    import treescore

    sizes = bench.sizes
    rows, k = sizes.topk_rows, sizes.topk_k
    text = bench.ctx.ensemble.texts[0]
    booster, model = lgb.Booster(model_str=text), treescore.Model.from_string(text)
    cheap_booster, cheap_features = _cheap_model(booster, sizes)
    cheap = treescore.Model.from_booster(cheap_booster)
    frame = bench.cached(rows)
    warm = bench.warm_frame() if sizes.warm_rows else None

    def query(source):
        return source.select("id", treescore.score(model).alias("s")).orderBy(F.desc("s")).limit(k)

    collected = {}

    def run(key, build, source, keep):
        result = build(source).collect()
        if keep:
            collected[key] = result

    for key, conf in (("full", {"spark.treescore.topK.enabled": "false"}), ("selected", {})):
        bench.spark_result(WORKLOAD, key, rows, lambda: run(key, query, frame, True),
                           warm_up=lambda: run(key, query, warm, False), conf=conf, note=METHODS[key], param=k)

    def by_one_tree(source):
        return source.select("id", treescore.score(model, num_iterations=1).alias("s")).orderBy(F.desc("s")).limit(k)

    bench.spark_result(WORKLOAD, "one_tree", rows, lambda: run("one_tree", by_one_tree, frame, False),
                       warm_up=lambda: run("one_tree", by_one_tree, warm, False),
                       conf={"spark.treescore.topK.enabled": "false"}, note=METHODS["one_tree"], param=k)
    approximate = {}

    def run_approximate(source, keep):
        result = treescore.top_k(source, model, k, score_col="s", cheap=cheap, oversample=OVERSAMPLE)
        got = result.df.select("id", "s").collect()
        if keep:
            approximate.update(rows=got, scanned=result.rows_scanned(), candidates=result.candidates(),
                               filtered=result.rows_filtered())

    bench.spark_result(WORKLOAD, "approximate", rows, lambda: run_approximate(frame, True),
                       warm_up=lambda: run_approximate(warm, False), note=METHODS["approximate"], param=k)
    ensemble = bench.ctx.ensemble
    whole = treescore.Ensemble([treescore.Model.from_string(t) for t in ensemble.texts], weights=list(ensemble.weights),
                               combine="sum")

    def by_ensemble(source):
        return source.select("id", treescore.score(whole).alias("s")).orderBy(F.desc("s")).limit(k)

    for key, conf in (("ensemble_full", {"spark.treescore.topK.enabled": "false"}), ("ensemble_selected", {})):
        bench.spark_result(WORKLOAD, key, rows, lambda: run(key, by_ensemble, frame, True),
                           warm_up=lambda: run(key, by_ensemble, warm, False), conf=conf, note=METHODS[key], param=k)
    route = treescore.Routed("shard", {str(i): treescore.Model.from_string(t) for i, t in enumerate(ensemble.texts)})

    def by_route(source):
        return source.withColumn("shard", F.col("id") % len(ensemble.texts)) \
            .select("id", treescore.score(route).alias("s")).orderBy(F.desc("s")).limit(k)

    for key, conf in (("route_full", {"spark.treescore.topK.enabled": "false"}), ("route_selected", {})):
        bench.spark_result(WORKLOAD, key, rows, lambda: run(key, by_route, frame, True),
                           warm_up=lambda: run(key, by_route, warm, False), conf=conf, note=METHODS[key], param=k)
    metrics, _ = session.batch_score_metrics(query(frame))
    ensemble_metrics, _ = session.batch_score_metrics(by_ensemble(frame))
    route_metrics, _ = session.batch_score_metrics(by_route(frame))
    frame.unpersist()
    x = bench.matrix(rows)
    expected = booster.predict(x, num_threads=CORES)
    members = [b.predict(x, num_threads=CORES) for b in ensemble.boosters]
    bench.diagnostics[WORKLOAD] = _checked(collected, approximate, expected, k, metrics, cheap_features)
    bench.diagnostics[WORKLOAD]["ensemble"] = _checked_pair(collected, "ensemble",
                                                            _weighted_sum(members, ensemble.weights), k, ensemble_metrics)
    picked = np.choose(np.arange(rows) % len(members), members)  # ids are the matrix's row numbers
    bench.diagnostics[WORKLOAD]["route"] = _checked_pair(collected, "route", picked, k, route_metrics)


def _cheap_model(booster, sizes):
    """A small imitation of `booster` on its most important features: Willump's cheap model."""
    import lightgbm as lgb

    names = data.feature_names(sizes.features)
    gains = booster.feature_importance("gain")
    features = [names[i] for i in np.argsort(-gains, kind="stable")[:CHEAP_FEATURES]]
    columns = [names.index(f) for f in features]
    x = data.features(min(CHEAP_TRAIN_ROWS, max(1_000, sizes.train_rows)), sizes.features, seed=600)
    params = {"objective": "regression", "num_leaves": CHEAP_LEAVES, "learning_rate": 0.1, "verbose": -1,
              "num_threads": CORES, "seed": 1}
    dataset = lgb.Dataset(x[:, columns], booster.predict(x, num_threads=CORES), feature_name=features)
    return lgb.train(params, dataset, CHEAP_TREES), features


def _weighted_sum(outputs, weights) -> np.ndarray:
    """The ensemble's documented order of operations for a sum: 0.0 + w1 * p1 + w2 * p2 + ..., in member order."""
    total = np.zeros(len(outputs[0]))
    for w, p in zip(weights, outputs):
        total = total + w * p
    return total


def _checked_pair(collected, prefix: str, expected: np.ndarray, k: int, metrics) -> dict:
    """Whether `prefix`_selected gives `prefix`_full's rows and bits, both the top k of `expected`."""
    full, selected = _top(collected.get(f"{prefix}_full", [])), _top(collected.get(f"{prefix}_selected", []))
    return {"selected_is_top": _is_top(selected, expected, k), "full_is_top": _is_top(full, expected, k),
            "selected_equals_full": bool(selected) and _bits(selected) == _bits(full),
            "trees_evaluated_share": (metrics["topKTreesEvaluated"] / metrics["topKTreesInFull"]
                                      if metrics and metrics.get("topKTreesInFull") else None)}


def _top(got) -> dict:
    return {int(r["id"]): float(r["s"]) for r in got}


def _bits(top: dict) -> dict:
    """id -> the score's bit pattern: equal dicts mean the same rows with the same bits."""
    return {i: int(np.float64(v).view(np.uint64)) for i, v in top.items()}


def _is_top(got: dict, expected: np.ndarray, k: int) -> bool:
    """k rows, none worse than the k-th best of `expected`, every better one in, scores bit for bit."""
    bar = np.partition(expected, len(expected) - k)[len(expected) - k]
    ids = np.array(sorted(got), dtype=np.int64)
    scores = np.array([got[i] for i in ids])
    return (len(got) == k and bool(np.all(expected[ids] >= bar)) and set(np.flatnonzero(expected > bar)) <= set(got)
            and bool(np.all(scores.view(np.uint64) == expected[ids].view(np.uint64))))


def _checked(collected, approximate, expected: np.ndarray, k: int, metrics, cheap_features) -> dict:
    full, selected = _top(collected.get("full", [])), _top(collected.get("selected", []))
    exact_top = set(np.argsort(-expected, kind="stable")[:k].tolist())
    found = _top(approximate.get("rows", []))
    return {
        "rows": len(expected), "k": k,
        "selected_is_top": _is_top(selected, expected, k), "full_is_top": _is_top(full, expected, k),
        "selected_equals_full": bool(selected) and _bits(selected) == _bits(full),
        "trees_evaluated_share": (metrics["topKTreesEvaluated"] / metrics["topKTreesInFull"]
                                  if metrics and metrics.get("topKTreesInFull") else None),
        "rows_dropped": metrics["topKRowsDropped"] if metrics else None,
        "approximate": {"oversample": OVERSAMPLE, "cheap_trees": CHEAP_TREES, "cheap_leaves": CHEAP_LEAVES,
                        "cheap_features": cheap_features, "rows_scanned": approximate.get("scanned"),
                        "candidates": approximate.get("candidates"),
                        "rows_filtered": approximate.get("filtered"),
                        "recall": len(set(found) & exact_top) / k if found else None,
                        "scores_exact": bool(found) and all(
                            np.float64(v).view(np.uint64) == expected[i].view(np.uint64) for i, v in found.items())},
    }
