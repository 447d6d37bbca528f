"""Scores over data made on the driver (createDataFrame from pandas or from rows, SQL VALUES) plan
through BatchScore on every Spark line, with Booster.predict's bits.

Spark's ConvertToLocalRelation folds a Project or a Filter over local data (a LocalRelation) into
new local data while it optimizes, on the driver, one row at a time. SQL VALUES is local data on
every line, and so is createDataFrame(pandas) through Arrow from Spark 4.2 on; other lines and
paths make an RDD of the rows, which the same tests cover. Score calls are unevaluable in the
optimizer, as Python UDFs are, so it leaves them to the operator.
The other optimizer rules that evaluate expressions early fold only foldable ones (ConstantFolding,
FoldablePropagation), and a score call is never foldable: even over literals only, it is scored by
the operator, on an executor. Connect clients' local data is checked in test_connect.py."""
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

import treescore
from conftest import FEATURE_NAMES, assert_same_bits, collect, features, plan_of, thresholds

ROWS = 2_000


def hostile_rows(booster, seed: int) -> np.ndarray:
    """Rows with NaN, +-0, +-inf, and values on the model's thresholds and one ulp either side."""
    x = features(ROWS, seed)
    rng = np.random.default_rng(seed)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan])
    for feature, values in thresholds(booster).items():
        near = np.array([v for t in values for v in (t, np.nextafter(t, np.inf), np.nextafter(t, -np.inf))])
        rows = rng.choice(ROWS, size=ROWS // 4, replace=False)
        x[rows, feature] = rng.choice(np.concatenate([near, specials]), size=len(rows))
    return x


def with_ids(x: np.ndarray) -> pd.DataFrame:
    pdf = pd.DataFrame(x, columns=FEATURE_NAMES)
    pdf.insert(0, "id", np.arange(len(x), dtype=np.int64))
    return pdf


def double_sql(v: float) -> str:
    """A double as SQL: repr round-trips, and the string cast parses NaN, Infinity and -0.0."""
    text = "NaN" if np.isnan(v) else "Infinity" if v == np.inf else "-Infinity" if v == -np.inf else repr(float(v))
    return f"CAST('{text}' AS DOUBLE)"


@pytest.fixture(scope="module")
def model(spark, regression_booster):
    m = treescore.Model.from_booster(regression_booster)
    treescore.register(spark, "local_model", m)
    return m


@pytest.fixture(scope="module")
def rows(regression_booster):
    return hostile_rows(regression_booster, seed=83)


def assert_batched_and_exact(scored, expected):
    got = collect(scored)
    assert "BatchScore" in plan_of(scored), plan_of(scored)
    assert_same_bits(got, expected)


@pytest.mark.parametrize("arrow", ["true", "false"])
def test_a_score_over_a_pandas_frame(spark, model, regression_booster, rows, arrow):
    spark.conf.set("spark.sql.execution.arrow.pyspark.enabled", arrow)
    try:
        df = spark.createDataFrame(with_ids(rows))
    finally:
        spark.conf.unset("spark.sql.execution.arrow.pyspark.enabled")
    assert_batched_and_exact(df.select("id", treescore.score(model).alias("s")), regression_booster.predict(rows))


def test_a_score_over_rows_from_a_list(spark, model, regression_booster, rows):
    df = spark.createDataFrame([(i, *map(float, r)) for i, r in enumerate(rows)], ["id", *FEATURE_NAMES])
    assert_batched_and_exact(df.select("id", treescore.score(model).alias("s")), regression_booster.predict(rows))


def test_a_score_over_sql_values(spark, model, regression_booster, rows):
    part = rows[:300]
    values = ", ".join(f"({i}, {', '.join(map(double_sql, r))})" for i, r in enumerate(part))
    scored = spark.sql(f"SELECT id, treescore_score('local_model') AS s FROM VALUES {values} "
                       f"AS t(id, {', '.join(FEATURE_NAMES)})")
    assert_batched_and_exact(scored, regression_booster.predict(part))


def test_a_filter_on_a_score_over_local_data(spark, model, regression_booster, rows):
    expected = regression_booster.predict(rows)
    bar = float(np.median(expected))
    kept = spark.createDataFrame(with_ids(rows)).filter(treescore.score(model) > bar)
    ids = kept.select("id").toPandas().id.to_numpy()
    assert "BatchScore" in plan_of(kept), plan_of(kept)
    assert sorted(ids.tolist()) == np.flatnonzero(expected > bar).tolist()


def test_an_ensemble_over_local_data(spark, model, regression_booster, binary_booster, rows):
    blend = treescore.Ensemble([model, treescore.Model.from_booster(binary_booster)], weights=[0.25, 0.75],
                               combine="sum")
    scored = spark.createDataFrame(with_ids(rows)).select("id", treescore.score(blend).alias("s"))
    assert_batched_and_exact(scored, 0.25 * regression_booster.predict(rows) + 0.75 * binary_booster.predict(rows))


def test_a_score_over_literals_only_is_scored_by_the_operator(spark, model, regression_booster, rows):
    row = rows[0]
    scored = spark.sql(f"SELECT 0 AS id, treescore_score('local_model', {', '.join(map(double_sql, row))}) AS s")
    assert_batched_and_exact(scored, regression_booster.predict(row[None, :]))


NO_EXTENSIONS_JOB = textwrap.dedent("""
    import sys
    import numpy as np, pandas as pd
    from pyspark.sql import SparkSession
    import treescore

    model_file, data, out = sys.argv[1:]
    spark = (SparkSession.builder.master("local[1]").config("spark.jars", treescore.jar_path())
             .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1").getOrCreate())
    assert not spark._jvm.treescore.TreescoreExtensions.installedIn(spark._jsparkSession)
    model = treescore.Model.load(model_file)
    scored = spark.createDataFrame(pd.read_parquet(data)).repartition(2).select("id", treescore.score(model).alias("s"))
    s = scored.orderBy("id").toPandas().s.to_numpy()
    plan = scored._jdf.queryExecution().executedPlan().toString()
    assert "BatchScore" not in plan and "treescore_score(" in plan, plan
    np.save(out, s)
    spark.stop()
""")


def test_a_session_without_the_extensions_scores_one_row_at_a_time(tmp_path, regression_booster, rows):
    """Without treescore's rules nothing would batch a call, so each is built to be evaluated by row."""
    model_file, data, out = str(tmp_path / "m.txt"), str(tmp_path / "rows.parquet"), str(tmp_path / "s.npy")
    regression_booster.save_model(model_file)
    with_ids(rows).to_parquet(data)
    done = subprocess.run([sys.executable, "-c", NO_EXTENSIONS_JOB, model_file, data, out],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr[-5000:]
    assert_same_bits(np.load(out), regression_booster.predict(rows))
