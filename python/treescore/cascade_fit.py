"""Cascade.fit: Willump's automatic cascade, fitted on the driver with lightgbm.

From an expensive model and a sample of the rows it scores, it

1. ranks the expensive model's features by total split gain and keeps the `max_features` best;
2. trains a cheap LightGBM model on those features alone, with the expensive model's own output
   (Booster.predict on the sample) as the label: the cheap model imitates the expensive one,
   it never sees the true labels;
3. chooses accept_below and accept_above on a held-out part of the sample, so that the cheap
   stage answers as many rows as it can while the cascade still agrees with the expensive
   model on at least `target_agreement` of the held-out rows.

A row agrees when the cascade's output and the expensive model's output
- for a binary classifier (objective binary or cross_entropy: outputs are probabilities) fall
  on the same side of `decision_threshold`: both > it, or both <= it (the class
  LGBMClassifier.predict gives at 0.5);
- for any other single-output objective are at most `tolerance` apart: |cascade - expensive| <= tolerance.
A row the cascade escalates gets the expensive model's own output, so it always agrees.

The thresholds come from an exhaustive two-sided search: the cheap stage may accept a low tail
(cheap output < accept_below) and a high tail (> accept_above) of any sizes, each cut between
two distinct held-out cheap outputs (every empirical quantile), and the pair answering the most
held-out rows within the allowed disagreements wins (ties: the one that agrees more). It is
exact, O(n log n) in the held-out rows.
"""
import math
import numbers
from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple

import numpy as np

from treescore.model import Model

CHEAP_TREES = 20  # Willump's cheap models are small: a few trees ...
CHEAP_LEAVES = 15  # ... of few leaves, so the first stage costs a small share of the expensive model
MAX_FEATURES = 10
SAMPLE_ROWS = 100_000  # rows collected to the driver: enough for thresholds at 1% disagreement, small in memory
HELD_OUT_SHARE = 0.3
MIN_PART_ROWS = 200  # rows each of the training and held-out parts needs at least
BINARY_OBJECTIVES = ("binary", "cross_entropy", "xentropy")
# A cascade accepts outputs strictly outside [accept_below, accept_above]: an infinite side accepts nothing.
NO_LOW_TAIL, NO_HIGH_TAIL = -math.inf, math.inf


@dataclass(frozen=True)
class Fitted:
    """What fit() found: the cheap model, the thresholds, and what was measured on the held-out rows."""
    cheap_booster: object  # a lightgbm.Booster
    features: List[str]
    accept_below: float
    accept_above: float
    agreement: float
    escalation_rate: float
    held_out_rows: int
    agrees_when: str


@dataclass(frozen=True)
class AgreementRule:
    describe: str
    agrees: Callable[[np.ndarray, np.ndarray], np.ndarray]  # (cascade output, expensive output) -> bool per row


def fit(expensive_model: Model, sample, target_agreement: float = 0.99, *, max_features: int = MAX_FEATURES,
        tolerance: Optional[float] = None, decision_threshold: Optional[float] = None,
        sample_rows: int = SAMPLE_ROWS, held_out_share: float = HELD_OUT_SHARE, cheap_trees: int = CHEAP_TREES,
        cheap_leaves: int = CHEAP_LEAVES, cheap_params: Optional[dict] = None, seed: int = 0) -> Fitted:
    """Cascade.fit: see treescore.ensembles.Cascade.fit and this module's docstring."""
    lgb = _lightgbm()
    _check_options(expensive_model, target_agreement, held_out_share, max_features=max_features,
                   sample_rows=sample_rows, cheap_trees=cheap_trees, cheap_leaves=cheap_leaves)
    text = expensive_model._java_model.text()
    expensive = lgb.Booster(model_str=text)
    stated = expensive_model._java_model.objective()
    # A model text without an objective line predicts raw sums, like a regressor.
    objective = stated.get() if stated.isDefined() else "regression"
    rule = _agreement_rule(objective, expensive.num_model_per_iteration(), tolerance, decision_threshold)

    names = expensive.feature_name()
    x = _collect(sample, names, sample_rows)
    held_out_rows = round(held_out_share * len(x))
    if min(held_out_rows, len(x) - held_out_rows) < MIN_PART_ROWS:
        raise ValueError(f"treescore: Cascade.fit needs at least {MIN_PART_ROWS} rows to train the cheap model and "
                         f"{MIN_PART_ROWS} held out to choose its thresholds; the sample has {len(x):,} rows, "
                         f"{held_out_rows:,} of them held out (held_out_share={held_out_share})")
    shuffled = np.random.default_rng(seed).permutation(len(x))  # the sample may come ordered (by time, by key)
    held_out, training = shuffled[:held_out_rows], shuffled[held_out_rows:]
    expensive_output = expensive.predict(x)

    chosen = _most_important(expensive, max_features)
    features = [names[j] for j in chosen]
    # The cheap model learns the expensive model's output: a probability for a classifier
    # (cross_entropy takes labels in [0, 1] and predicts on the same scale), a value otherwise.
    params = {"objective": "cross_entropy" if objective in BINARY_OBJECTIVES else "regression",
              "num_leaves": cheap_leaves, "learning_rate": 0.2, "min_data_in_leaf": 20, "seed": seed,
              "deterministic": True, "verbose": -1, **(cheap_params or {})}
    categorical = [f for f in features if f in set(expensive_model.categorical_features)]
    dataset = lgb.Dataset(x[np.ix_(training, chosen)], label=expensive_output[training], feature_name=features,
                          categorical_feature=categorical or "auto")
    cheap = lgb.train(params, dataset, num_boost_round=cheap_trees)

    cheap_output, expected = cheap.predict(x[np.ix_(held_out, chosen)]), expensive_output[held_out]
    accept_below, accept_above = choose_thresholds(cheap_output, rule.agrees(cheap_output, expected),
                                                   target_agreement)
    # Measured from the cascade's own outputs on the held-out rows, as treescore computes them.
    accepted = (cheap_output < accept_below) | (cheap_output > accept_above)
    cascade_output = np.where(accepted, cheap_output, expected)
    return Fitted(cheap, features, accept_below, accept_above,
                  agreement=float(np.mean(rule.agrees(cascade_output, expected))),
                  escalation_rate=float(1 - np.mean(accepted)), held_out_rows=held_out_rows,
                  agrees_when=rule.describe)


def _check_options(expensive_model, target_agreement: float, held_out_share: float, **counts: int) -> None:
    if not isinstance(expensive_model, Model):
        raise TypeError(f"treescore: Cascade.fit takes a treescore.Model as the expensive model, got "
                        f"{type(expensive_model).__name__} (wrap a Booster in treescore.Model.from_booster)")
    if expensive_model._is_connect:
        raise NotImplementedError("treescore: Cascade.fit reads the expensive model's text and categorical features "
                                  "from the driver's JVM; it needs the classic (py4j) API")
    if not 0 < target_agreement <= 1:  # also refuses NaN
        raise ValueError(f"treescore: target_agreement is a share of rows in (0, 1], got {target_agreement}")
    if not 0 < held_out_share < 1:
        raise ValueError(f"treescore: held_out_share is a share of the sample in (0, 1), got {held_out_share}")
    for name, value in counts.items():
        least = 2 if name == "cheap_leaves" else 1  # LightGBM's smallest tree has two leaves
        if not isinstance(value, numbers.Integral) or value < least:
            raise ValueError(f"treescore: {name} must be an integer >= {least}, got {value!r}")


def choose_thresholds(cheap_output: np.ndarray, agrees: np.ndarray, target_agreement: float) -> Tuple[float, float]:
    """(accept_below, accept_above) under which the cheap stage answers the most of these rows
    while the cascade agrees on at least target_agreement of them; `agrees` says, per row,
    whether the cheap output alone agrees with the expensive model's.

    Escalated rows always agree, so the accepted rows may hold at most `allowed` disagreements.
    Rows are grouped by distinct cheap output: accepting the first a groups (below) and the
    last b groups (above) costs prefix and suffix sums of disagreements, and for each a the
    largest affordable b is a binary search, since those sums only grow.
    """
    rows = len(cheap_output)
    allowed = _allowed_disagreements(rows, target_agreement)
    order = np.argsort(cheap_output, kind="stable")
    values, starts, counts = np.unique(cheap_output[order], return_index=True, return_counts=True)
    misses = np.add.reduceat((~agrees[order]).astype(np.int64), starts)  # per group of equal outputs
    if misses.sum() <= allowed:  # the cheap model alone is good enough: accept every (finite) output
        return NO_HIGH_TAIL, NO_HIGH_TAIL
    groups = len(values)
    low_misses = np.concatenate([[0], np.cumsum(misses)])  # [a]: of accepting the first a groups
    low_rows = np.concatenate([[0], np.cumsum(counts)])
    high_misses = np.concatenate([[0], np.cumsum(misses[::-1])])  # [b]: of accepting the last b groups
    high_rows = np.concatenate([[0], np.cumsum(counts[::-1])])
    low = np.arange(groups)  # at least one group stays escalated (all accepted was handled above)
    budget = allowed - low_misses[low]
    low = low[budget >= 0]
    high = np.minimum(np.searchsorted(high_misses, budget[budget >= 0], side="right") - 1, groups - 1 - low)
    answered = low_rows[low] + high_rows[high]
    missed = low_misses[low] + high_misses[high]
    best = np.lexsort((missed, -answered))[0]  # most rows answered, then fewest disagreements
    a, b = int(low[best]), int(high[best])
    accept_below = float(values[a]) if a > 0 else NO_LOW_TAIL  # outputs < values[a]: the first a groups
    accept_above = float(values[groups - 1 - b]) if b > 0 else NO_HIGH_TAIL  # > it: the last b groups
    return accept_below, accept_above


def _allowed_disagreements(rows: int, target_agreement: float) -> int:
    """The most disagreements among `rows` rows with (rows - d) / rows >= target, in floating point
    as the reported agreement is computed (floor((1 - target) * rows) can be one off either way)."""
    allowed = math.floor((1 - target_agreement) * rows)
    while allowed > 0 and (rows - allowed) / rows < target_agreement:
        allowed -= 1
    while (rows - allowed - 1) / rows >= target_agreement and allowed < rows:
        allowed += 1
    return allowed


def _agreement_rule(objective: str, outputs_per_row: int, tolerance: Optional[float],
                    decision_threshold: Optional[float]) -> AgreementRule:
    if outputs_per_row > 1:
        raise ValueError(f"treescore: Cascade.fit takes a single-output model, got a {objective} model with "
                         f"{outputs_per_row} outputs per row (cascades combine single-output models)")
    if objective in BINARY_OBJECTIVES:
        if tolerance is not None:
            raise ValueError(f"treescore: a {objective} model's cascade agrees by class (decision_threshold), "
                             "not by tolerance; drop tolerance")
        threshold = 0.5 if decision_threshold is None else float(decision_threshold)
        return AgreementRule(f"on the same side of {threshold}",
                             lambda cascade, expensive: (cascade > threshold) == (expensive > threshold))
    if decision_threshold is not None:
        raise ValueError(f"treescore: decision_threshold applies to binary classifiers; a {objective} model's "
                         "cascade agrees within tolerance")
    if tolerance is None or not tolerance >= 0:
        raise ValueError(f"treescore: a {objective} model's cascade agrees when |cascade - expensive| <= tolerance; "
                         f"Cascade.fit needs tolerance (>= 0) for it, got {tolerance}")
    return AgreementRule(f"within {tolerance} of it",
                         lambda cascade, expensive: np.abs(cascade - expensive) <= tolerance)


def _most_important(booster, count: int) -> List[int]:
    """The indices of the booster's `count` features of the highest total split gain, best first
    (features it never splits on have gain 0 and are never chosen)."""
    gain = booster.feature_importance("gain")
    ranked = [int(j) for j in np.argsort(-gain, kind="stable") if gain[j] > 0]
    if not ranked:
        raise ValueError("treescore: the expensive model has no splits, so no feature to train a cheap model on")
    return ranked[:count]


def _collect(sample, names: List[str], sample_rows: int) -> np.ndarray:
    """The first sample_rows rows of the expensive model's feature columns as a float64 matrix
    (nulls as NaN), from a Spark or pandas DataFrame."""
    missing = [n for n in names if n not in list(sample.columns)]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise ValueError(f"treescore: the sample has no column '{missing[0]}'{more}, a feature of the expensive "
                         "model; Cascade.fit needs every feature column")
    if hasattr(sample, "toPandas"):  # a Spark DataFrame: only the features, at most sample_rows, cross to the driver
        sample = sample.select(*names).limit(sample_rows).toPandas()
    else:
        sample = sample[names].head(sample_rows)
    columns = []
    for name in names:
        try:
            columns.append(sample[name].to_numpy(dtype=np.float64, na_value=np.nan))
        except (TypeError, ValueError) as error:
            raise ValueError(f"treescore: the sample's column '{name}' is not numeric ({error})") from None
    return np.column_stack(columns) if columns else np.empty((len(sample), 0))


def _lightgbm():
    try:
        import lightgbm
    except ImportError:
        raise ImportError("treescore: Cascade.fit trains the cheap model with lightgbm on the driver; "
                          "pip install 'treescore[demo]' (or lightgbm)") from None
    return lightgbm
