"""Cascade.fit against fresh rows: the agreement and escalation it reports hold on rows it never
saw, scored in Spark and compared with the expensive model's own Booster.predict; its scores are
the bits of a NumPy cascade built on Booster.predict; its threshold search is the best of all
pairs; bad input is refused, naming what is wrong.
"""
import math

import lightgbm as lgb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

import treescore
from conftest import assert_same_bits, collect
from treescore.cascade_fit import NO_HIGH_TAIL, NO_LOW_TAIL, choose_thresholds

NAMES = [f"f{i:02d}" for i in range(20)]
SAMPLE_ROWS, FRESH_ROWS = 20_000, 20_000
TARGET = 0.99


def rows(count: int, seed: int) -> np.ndarray:
    """20 features, 2% missing; a few of them carry most of the signal, as in real tables."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(count, len(NAMES)))
    x[rng.random(x.shape) < 0.02] = np.nan
    return x


def signal(x: np.ndarray, seed: int) -> np.ndarray:
    s = np.nan_to_num(x)
    small = np.random.default_rng(seed).normal(scale=0.15, size=len(NAMES) - 6)
    return 2.5 * s[:, 0] - 1.5 * s[:, 1] + s[:, 2] * s[:, 3] + np.sin(2 * s[:, 4]) + 0.5 * s[:, 5] + s[:, 6:] @ small


def train(objective: str, trees: int) -> lgb.Booster:
    x = rows(20_000, seed=11)
    y = signal(x, seed=12) + np.random.default_rng(13).normal(scale=0.5, size=len(x))
    label = (y > 0).astype(float) if objective == "binary" else y
    params = {"objective": objective, "num_leaves": 31, "learning_rate": 0.05, "verbose": -1, "num_threads": 1,
              "seed": 3}
    return lgb.train(params, lgb.Dataset(x, label, feature_name=NAMES), trees)


def frame(spark, folder, x: np.ndarray):
    """x as Parquet with true nulls for NaN and a row id, read back by Spark."""
    columns = {"id": pa.array(np.arange(len(x), dtype=np.int64))}
    for j, name in enumerate(NAMES):
        columns[name] = pa.array(x[:, j], mask=np.isnan(x[:, j]))
    path = str(folder / "rows.parquet")
    pq.write_table(pa.table(columns), path)
    return spark.read.parquet(path)


@pytest.fixture(scope="module")
def binary():
    return train("binary", trees=200)


@pytest.fixture(scope="module")
def sample_and_fresh(spark, tmp_path_factory):
    sample_x, fresh_x = rows(SAMPLE_ROWS, seed=21), rows(FRESH_ROWS, seed=22)
    return (frame(spark, tmp_path_factory.mktemp("sample"), sample_x),
            (frame(spark, tmp_path_factory.mktemp("fresh"), fresh_x), fresh_x))


@pytest.fixture(scope="module")
def fitted(spark, binary, sample_and_fresh):
    sample_df, _ = sample_and_fresh
    return treescore.Cascade.fit(treescore.Model.from_booster(binary), sample_df, target_agreement=TARGET,
                                 cheap_params={"num_threads": 1})


def slack(share: float, held_out: int, fresh: int) -> float:
    """How far a share measured on `fresh` rows may fall from one reported on `held_out` rows.

    Each is a binomial proportion around the cascade's true share p (close to `share`): its
    standard deviation is sqrt(p(1 - p) / n). The held-out estimate also chose the thresholds,
    which biases it by about one such deviation; 4 deviations of the two independent estimates
    combined cover both with room to spare.
    """
    return 4 * math.sqrt(share * (1 - share) * (1 / held_out + 1 / fresh))


def cascade_reference(cascade, expensive: lgb.Booster, x: np.ndarray) -> np.ndarray:
    """The cascade in NumPy: the cheap Booster's output where it is outside [accept_below,
    accept_above], else the expensive Booster's."""
    cheap = cascade.cheap_booster.predict(x[:, [NAMES.index(f) for f in cascade.features]])
    accepted = (cheap < cascade.accept_below) | (cheap > cascade.accept_above)
    return np.where(accepted, cheap, expensive.predict(x))


def test_reported_agreement_and_escalation_hold_on_fresh_rows(spark, binary, sample_and_fresh, fitted):
    _, (fresh_df, fresh_x) = sample_and_fresh
    scored = collect(fresh_df.select("id", treescore.score(fitted).alias("s")))
    expected = binary.predict(fresh_x)
    fresh_agreement = np.mean((scored > 0.5) == (expected > 0.5))
    cheap = fitted.cheap_booster.predict(fresh_x[:, [NAMES.index(f) for f in fitted.features]])
    fresh_escalation = np.mean((cheap >= fitted.accept_below) & (cheap <= fitted.accept_above))

    assert fitted.held_out_rows == round(0.3 * SAMPLE_ROWS)
    assert fitted.agreement >= TARGET
    assert fresh_agreement >= TARGET - slack(TARGET, fitted.held_out_rows, FRESH_ROWS), fresh_agreement
    rate = fitted.escalation_rate
    assert abs(fresh_escalation - rate) <= slack(rate, fitted.held_out_rows, FRESH_ROWS), (fresh_escalation, rate)
    # A cascade worth having: the cheap stage answers most rows, and not every row.
    assert 0 < rate < 0.5, rate
    assert not fitted.escalates_everything


def test_the_cheap_model_reads_the_most_important_columns_by_name(binary, fitted):
    gain = binary.feature_importance("gain")
    assert fitted.features == [NAMES[j] for j in np.argsort(-gain)[:10]]
    assert fitted.cheap_booster.feature_name() == fitted.features
    assert fitted.first.feature_names == fitted.features  # the treescore Model of the first stage
    assert fitted.cheap_booster.num_trees() == 20
    assert max(int(line.split("=")[1]) for line in fitted.cheap_booster.model_to_string().splitlines()
               if line.startswith("num_leaves=")) <= 15
    shown = repr(fitted)
    assert shown.startswith(f"FittedCascade(agreement {fitted.agreement:.4f} with the expensive model on 6,000 "
                            "held-out rows (target 0.99, agreeing when on the same side of 0.5)")
    assert f"escalation {fitted.escalation_rate:.2%}" in shown and ", ".join(fitted.features) in shown


def test_scores_are_the_bits_of_a_numpy_cascade(spark, engine, binary, sample_and_fresh, fitted):
    _, (fresh_df, fresh_x) = sample_and_fresh
    scored = collect(fresh_df.select("id", treescore.score(fitted).alias("s")))
    assert_same_bits(scored, cascade_reference(fitted, binary, fresh_x))


def test_a_regressor_agrees_within_tolerance_fitted_from_pandas(spark, engine, sample_and_fresh, tmp_path):
    regressor = train("regression", trees=100)
    sample = pd.DataFrame(rows(SAMPLE_ROWS, seed=31), columns=NAMES)
    fitted = treescore.Cascade.fit(treescore.Model.from_booster(regressor), sample, target_agreement=0.9,
                                   tolerance=0.5, max_features=6, cheap_params={"num_threads": 1})
    _, (fresh_df, fresh_x) = sample_and_fresh
    scored = collect(fresh_df.select("id", treescore.score(fitted).alias("s")))
    assert_same_bits(scored, cascade_reference(fitted, regressor, fresh_x))
    fresh_agreement = np.mean(np.abs(scored - regressor.predict(fresh_x)) <= 0.5)
    assert len(fitted.features) == 6 and fitted.agreement >= 0.9
    assert fresh_agreement >= 0.9 - slack(0.9, fitted.held_out_rows, FRESH_ROWS), fresh_agreement
    assert 0 < fitted.escalation_rate < 1
    assert "agreeing when within 0.5 of it" in repr(fitted)


def test_a_cheap_model_that_cannot_meet_the_target_escalates_every_row(spark, binary, sample_and_fresh, tmp_path):
    sample_df, (fresh_df, fresh_x) = sample_and_fresh
    # One tree of two leaves barely moved from the mean: each leaf holds many rows of both classes.
    fitted = treescore.Cascade.fit(treescore.Model.from_booster(binary), sample_df, target_agreement=TARGET,
                                   cheap_trees=1, cheap_leaves=2,
                                   cheap_params={"learning_rate": 1e-3, "num_threads": 1})
    assert fitted.escalates_everything and fitted.escalation_rate == 1.0 and fitted.agreement == 1.0
    assert (fitted.accept_below, fitted.accept_above) == (NO_LOW_TAIL, NO_HIGH_TAIL)
    assert "escalates every row" in repr(fitted)
    assert_same_bits(collect(fresh_df.select("id", treescore.score(fitted).alias("s"))), binary.predict(fresh_x))
    # Infinite thresholds survive a save and a load (JSON has no infinities: they are written as strings).
    fitted.save(str(tmp_path / "escalate-all"))
    loaded = treescore.load(str(tmp_path / "escalate-all"))
    assert_same_bits(collect(fresh_df.select("id", treescore.score(loaded).alias("s"))), binary.predict(fresh_x))


def brute_force(cheap: np.ndarray, agrees: np.ndarray, target: float):
    """The most rows any (accept_below, accept_above) pair answers within the target, trying every pair."""
    cuts = [NO_LOW_TAIL] + sorted(set(cheap)) + [NO_HIGH_TAIL]
    best = 0
    for i, below in enumerate(cuts):
        for above in cuts[i:]:
            accepted = (cheap < below) | (cheap > above)
            if (len(cheap) - np.sum(accepted & ~agrees)) / len(cheap) >= target:
                best = max(best, int(accepted.sum()))
    return best


@pytest.mark.parametrize("seed", range(6))
def test_the_threshold_search_answers_as_many_rows_as_the_best_pair(seed):
    rng = np.random.default_rng(seed)
    cheap = np.round(rng.random(60), 1 if seed % 2 else 3)  # coarse values: many ties
    agrees = rng.random(60) < np.abs(cheap - 0.5) * 2  # confident outputs agree more often
    for target in (0.8, 0.9, 0.97, 1.0):
        below, above = choose_thresholds(cheap, agrees, target)
        accepted = (cheap < below) | (cheap > above)
        assert below <= above
        assert (60 - np.sum(accepted & ~agrees)) / 60 >= target
        assert accepted.sum() == brute_force(cheap, agrees, target), (seed, target)


def test_the_threshold_search_at_its_extremes():
    cheap = np.linspace(0, 1, 50)
    assert choose_thresholds(cheap, np.zeros(50, dtype=bool), 0.99) == (NO_LOW_TAIL, NO_HIGH_TAIL)
    below, above = choose_thresholds(cheap, np.ones(50, dtype=bool), 0.99)
    assert not ((cheap >= below) & (cheap <= above)).any()  # everything agrees: nothing escalated


def test_bad_input_is_refused_naming_what_is_wrong(spark, binary, sample_and_fresh):
    sample_df, _ = sample_and_fresh
    model = treescore.Model.from_booster(binary)
    for target in (0, 1.5, -0.1, float("nan")):
        with pytest.raises(ValueError, match=r"target_agreement is a share of rows in \(0, 1\], got"):
            treescore.Cascade.fit(model, sample_df, target_agreement=target)
    with pytest.raises(ValueError, match="the sample has no column 'f07', a feature of the expensive model"):
        treescore.Cascade.fit(model, sample_df.drop("f07"))
    with pytest.raises(ValueError, match="the sample has no column 'f03' \\(and 1 more\\)"):
        treescore.Cascade.fit(model, sample_df.drop("f03", "f12"))
    with pytest.raises(ValueError, match="needs at least 200 rows to train the cheap model and 200 held out to choose "
                                         "its thresholds; the sample has 500 rows, 150 of them held out"):
        treescore.Cascade.fit(model, sample_df, sample_rows=500)
    with pytest.raises(TypeError, match="takes a treescore.Model as the expensive model, got Booster"):
        treescore.Cascade.fit(binary, sample_df)
    with pytest.raises(ValueError, match="agrees by class \\(decision_threshold\\), not by tolerance"):
        treescore.Cascade.fit(model, sample_df, tolerance=0.1)
    with pytest.raises(ValueError, match="max_features must be an integer >= 1, got 0"):
        treescore.Cascade.fit(model, sample_df, max_features=0)
    with pytest.raises(ValueError, match="the sample's column 'f00' is not numeric"):
        treescore.Cascade.fit(model, sample_df.withColumn("f00", F.concat(F.lit("x"), F.col("f00").cast("string"))))

    regressor = treescore.Model.from_booster(train("regression", trees=5))
    with pytest.raises(ValueError, match=r"a regression model's cascade agrees when \|cascade - expensive\| <= "
                                         "tolerance; Cascade.fit needs tolerance"):
        treescore.Cascade.fit(regressor, sample_df)
    with pytest.raises(ValueError, match="decision_threshold applies to binary classifiers"):
        treescore.Cascade.fit(regressor, sample_df, tolerance=0.1, decision_threshold=0.3)

    x = rows(2_000, seed=41)
    multiclass = lgb.train({"objective": "multiclass", "num_class": 3, "verbose": -1, "num_threads": 1},
                           lgb.Dataset(x, np.digitize(signal(x, 12), [-1, 1]), feature_name=NAMES), 3)
    with pytest.raises(ValueError, match="takes a single-output model, got a multiclass model with 3 outputs per row"):
        treescore.Cascade.fit(treescore.Model.from_booster(multiclass), sample_df)
