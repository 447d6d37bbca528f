"""The cascade section: an expensive binary classifier on the benchmark's table, scored by
treescore alone and behind the cheap first stage that Cascade.fit puts in front of it, over
workload A's cached rows in the same run.

The classifier has the ensemble members' shape (trees, leaves, features, training rows) and is
trained once and cached in bench/.cache/models/ like them; its label is whether the table's
target is in its top 30% (a churn-like share of positives). Cascade.fit runs with its defaults
(20 trees x 15 leaves on the 10 features of the highest gain, agreement target 0.99 by class at
0.5) on a sample of rows drawn apart from the scored ones. Then, over the scored rows, the
cascade's outputs are compared with Booster.predict of the expensive model: the share on the
same side of 0.5 is the agreement; BatchScore's "rows escalated by cascades" metric gives the
escalation rate.
"""
import os
import time

import numpy as np

from bench import data, session
from bench.config import CORES, Sizes
from bench.models import CACHE_DIR

WORKLOAD = "cascade"
TARGET_AGREEMENT = 0.99
POSITIVE_SHARE = 0.3  # rows whose target is in its top 30% are the positive class
SAMPLE_SEED = 500  # Cascade.fit's sample: rows of the same table, none of them scored (those are seeds 1000+)
METHODS = {"expensive": "treescore, the expensive model alone", "cascade": "treescore, the fitted cascade"}


def expensive_text(sizes: Sizes, log) -> str:
    """The binary classifier's model text, trained on the ensemble's training rows and cached."""
    import lightgbm as lgb

    key = f"cascade-binary-f{sizes.features}-t{sizes.trees}-l{sizes.leaves}-n{sizes.train_rows}-v1"
    path = os.path.join(CACHE_DIR, key + ".txt")
    if not os.path.isfile(path):
        log(f"training the cascade's expensive classifier: {sizes.trees} trees, {sizes.leaves} leaves, "
            f"{sizes.features} features, {sizes.train_rows:,} rows (cached afterwards in {path})")
        x = data.features(sizes.train_rows, sizes.features, seed=7)
        y = data.target(x, seed=300)
        label = (y > np.quantile(y, 1 - POSITIVE_SHARE)).astype(np.float64)
        params = {"objective": "binary", "num_leaves": sizes.leaves, "learning_rate": 0.05, "min_data_in_leaf": 20,
                  "feature_fraction": 0.8, "bagging_fraction": 0.8, "bagging_freq": 1, "max_bin": 63, "seed": 1,
                  "num_threads": CORES, "verbose": -1}
        dataset = lgb.Dataset(x, label, feature_name=data.feature_names(sizes.features))
        os.makedirs(CACHE_DIR, exist_ok=True)
        lgb.train(params, dataset, sizes.trees).save_model(path + ".tmp")
        os.replace(path + ".tmp", path)  # a killed run never leaves half a model behind
    with open(path) as f:
        return f.read()


def fitted_cascade(sizes: Sizes, expensive_model, log):
    """Cascade.fit with its defaults on a sample of cascade_sample_rows rows, and the seconds it took."""
    import pandas as pd

    import treescore

    names = data.feature_names(sizes.features)
    sample = pd.DataFrame(data.features(sizes.cascade_sample_rows, sizes.features, seed=SAMPLE_SEED), columns=names)
    started = time.perf_counter()
    fitted = treescore.Cascade.fit(expensive_model, sample, target_agreement=TARGET_AGREEMENT,
                                   sample_rows=sizes.cascade_sample_rows)
    seconds = time.perf_counter() - started
    log(f"  {fitted!r} in {seconds:.1f} s")
    return fitted, seconds


def automatic_cascade(bench) -> None:
    import lightgbm as lgb

    import treescore

    sizes, rows = bench.sizes, bench.sizes.rows_a
    text = expensive_text(sizes, bench.log)
    expensive_booster, expensive = lgb.Booster(model_str=text), treescore.Model.from_string(text)
    fitted, fit_seconds = fitted_cascade(sizes, expensive, bench.log)
    frame = bench.cached(rows)  # workload A's rows, cached as A caches them
    warm = bench.warm_frame() if sizes.warm_rows else None
    scorers = {"expensive": expensive, "cascade": fitted}
    for key, scorer in scorers.items():
        scored = lambda source: source.select("id", treescore.score(scorer).alias("prediction"))  # noqa: E731
        bench.spark_result(WORKLOAD, key, rows, lambda: session.noop_write(scored(frame)),
                           warm_up=lambda: session.noop_write(scored(warm)), note=METHODS[key])
    metrics, _ = session.batch_score_metrics(frame.select("id", treescore.score(fitted).alias("prediction")))
    outputs = frame.select("id", *[treescore.score(s).alias(k) for k, s in scorers.items()]).toPandas()
    frame.unpersist()
    bench.diagnostics[WORKLOAD] = _checked(outputs.sort_values("id"), bench.matrix(rows), expensive_booster, fitted,
                                           metrics, sizes)
    bench.diagnostics[WORKLOAD]["fit"]["seconds"] = fit_seconds


def _checked(outputs, matrix: np.ndarray, expensive_booster, fitted, metrics, sizes: Sizes) -> dict:
    """The scored rows' outputs (ordered by id, as the matrix's rows are) against Booster.predict:
    the cascade's agreement with the expensive model, its escalations as the operator counted
    them and as a NumPy cascade does, and the share of bit-identical outputs of each scorer."""
    expected = expensive_booster.predict(matrix, num_threads=CORES)
    names = data.feature_names(sizes.features)
    cheap = fitted.cheap_booster.predict(matrix[:, [names.index(f) for f in fitted.features]], num_threads=CORES)
    accepted = (cheap < fitted.accept_below) | (cheap > fitted.accept_above)
    cascade_scores = outputs["cascade"].to_numpy()
    same_bits = lambda a, b: float(np.mean(a.view(np.uint64) == b.view(np.uint64)))  # noqa: E731
    return {
        "rows": len(matrix), "target_agreement": TARGET_AGREEMENT,
        "agreement": float(np.mean((cascade_scores > 0.5) == (expected > 0.5))),
        "escalated_rows": metrics["escalatedRows"] if metrics else None,
        "escalation_rate": metrics["escalatedRows"] / metrics["numOutputRows"] if metrics else None,
        "reference_escalated_rows": int(np.sum(~accepted)),
        "expensive_identical_share": same_bits(outputs["expensive"].to_numpy(), expected),
        "cascade_identical_to_reference_share": same_bits(cascade_scores, np.where(accepted, cheap, expected)),
        "fit": {"sample_rows": sizes.cascade_sample_rows, "held_out_rows": fitted.held_out_rows,
                "agreement": fitted.agreement, "escalation_rate": fitted.escalation_rate, "features": fitted.features,
                "accept_below": fitted.accept_below, "accept_above": fitted.accept_above,
                "cheap_trees": fitted.cheap_booster.num_trees()},
        "expensive": {"trees": expensive_booster.num_trees(), "leaves": sizes.leaves, "features": sizes.features},
    }
