"""Named models from SQL: treescore.register, spark.sql with treescore_score and its grid form,
clear errors for unknown names and missing files, and the SQL-only example session."""
import os
import re

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest
from pyspark.errors import AnalysisException

import treescore
from conftest import FEATURE_NAMES, assert_same_bits, feature_frame, plan_of
from treescore.registry import registered

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLUMNS = ", ".join(FEATURE_NAMES)


def scores(df, column=0):
    return np.array([row[column] for row in df.collect()])


def test_a_registered_model_scores_from_sql_as_lightgbm_does(spark, tmp_path, regression_booster):
    frame, x = feature_frame(spark, tmp_path, 3000, seed=21)
    frame.createOrReplaceTempView("features_21")
    treescore.register(spark, "reg_v1", treescore.Model.from_booster(regression_booster))
    scored = spark.sql(f"SELECT treescore_score('reg_v1', {COLUMNS}) AS p FROM features_21 ORDER BY id")
    assert "BatchScore" in plan_of(scored)
    assert_same_bits(scores(scored), regression_booster.predict(x))
    by_name = spark.sql("SELECT treescore_score('reg_v1') FROM features_21 ORDER BY id")
    assert_same_bits(scores(by_name), regression_booster.predict(x))
    assert "reg_v1" in registered(spark)


def test_a_path_and_an_ensemble_register_and_the_grid_form_equals_score_grid(spark, tmp_path, regression_booster,
                                                                            binary_booster):
    frame, x = feature_frame(spark, tmp_path, 2000, seed=22)
    frame.createOrReplaceTempView("features_22")
    path = str(tmp_path / "binary.txt")
    binary_booster.save_model(path)
    treescore.register(spark, "bin_file", path)
    got = spark.sql("SELECT treescore_score('bin_file') FROM features_22 ORDER BY id")
    assert_same_bits(scores(got), binary_booster.predict(x))

    reg, binary = treescore.Model.from_booster(regression_booster), treescore.Model.from_booster(binary_booster)
    treescore.register(spark, "blend", treescore.Ensemble([reg, binary], weights=[0.25, 0.75], combine="sum"))
    blended = spark.sql("SELECT treescore_score('blend') FROM features_22 ORDER BY id")
    assert_same_bits(scores(blended), 0.25 * regression_booster.predict(x) + 0.75 * binary_booster.predict(x))

    treescore.register(spark, "reg_grid", reg)
    sql = spark.sql("SELECT treescore_score_grid('reg_grid', 'x1', array(-1.0, 0, 0.5), "
                    "map('x2', 'x2 + x1'), 'increasing') FROM features_22 ORDER BY id")
    api = frame.orderBy("id").select(treescore.score_grid(reg, vary={"x1": [-1.0, 0.0, 0.5]},
                                                          derived={"x2": "x2 + x1"}, monotone="increasing"))
    assert [list(r[0]) for r in sql.collect()] == [list(r[0]) for r in api.collect()]


def test_unknown_names_and_missing_files_are_clear_errors(spark, tmp_path, regression_booster):
    treescore.register(spark, "known_one", treescore.Model.from_booster(regression_booster))
    with pytest.raises(AnalysisException, match=r"no model is registered as 'demand_v4'.*known_one"):
        spark.sql("SELECT treescore_score('demand_v4', 1.0)").collect()
    missing = str(tmp_path / "missing-model.txt")
    with pytest.raises(FileNotFoundError, match=re.escape(missing)):
        treescore.register(spark, "gone", missing)
    with pytest.raises(ValueError, match="model name"):
        treescore.register(spark, "", treescore.Model.from_booster(regression_booster))


def test_an_mlflow_model_directory_registers_by_path_and_by_conf(spark, tmp_path, regression_booster):
    frame, x = feature_frame(spark, tmp_path, 1500, seed=23)
    frame.createOrReplaceTempView("features_23")
    directory = tmp_path / "mlflow_model"
    directory.mkdir()
    regression_booster.save_model(str(directory / "model.lgb"))
    (directory / "MLmodel").write_text("flavors:\n  lightgbm:\n    data: model.lgb\n"
                                       "    model_class: lightgbm.basic.Booster\n")
    treescore.register(spark, "mlflow_by_path", str(directory))
    got = spark.sql("SELECT treescore_score('mlflow_by_path') FROM features_23 ORDER BY id")
    assert_same_bits(scores(got), regression_booster.predict(x))
    spark.sql(f"SET spark.treescore.model.mlflow_by_conf = {directory}")
    got = spark.sql("SELECT treescore_score('mlflow_by_conf') FROM features_23 ORDER BY id")
    assert_same_bits(scores(got), regression_booster.predict(x))

    neither = tmp_path / "just_a_folder"
    neither.mkdir()
    with pytest.raises(FileNotFoundError, match=re.escape(str(neither)) + ".*neither spec.json nor MLmodel"):
        treescore.register(spark, "neither", str(neither))


def _statements(sql_text: str):
    lines = [line for line in sql_text.splitlines() if not line.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def test_the_sql_only_example_session(spark, tmp_path):
    rng = np.random.default_rng(5)
    sales = pd.DataFrame({"id": np.arange(1500), "price": rng.uniform(5, 50, 1500),
                          "discount": rng.choice([0.0, 0.1, 0.2, 0.3], 1500), "stock": rng.uniform(0, 100, 1500)})
    x = sales[["price", "discount", "stock"]].to_numpy()
    units = 100 / x[:, 0] * (1 + 2 * x[:, 1]) + 0.1 * x[:, 2] + rng.normal(size=1500)
    booster = lgb.train({"objective": "regression", "verbose": -1, "num_threads": 1},
                        lgb.Dataset(x, units, feature_name=["price", "discount", "stock"]), 30)
    booster.save_model(str(tmp_path / "demand.txt"))
    sales.to_parquet(str(tmp_path / "sales.parquet"))

    # A session of its own, configured only as a SQL client's --conf would, running only SQL.
    session = spark.newSession()
    session.conf.set("treescore.example.dir", str(tmp_path))
    with open(os.path.join(ROOT, "examples", "sql_session.sql")) as f:
        results = [session.sql(statement) for statement in _statements(f.read())]
    assert "model(" in results[2].collect()[0]["model"]
    rows = results[-1].collect()
    expected = booster.predict(x)
    assert_same_bits([r["units"] for r in rows], expected)
    assert_same_bits([r["units_by_name"] for r in rows], expected)
    assert_same_bits(np.array([r["contributions"] for r in rows]), booster.predict(x, pred_contrib=True))
    curves = np.array([r["units_by_discount"] for r in rows])
    for k, discount in enumerate([0.0, 0.1, 0.2, 0.3]):
        at_discount = x.copy()
        at_discount[:, 1] = discount
        assert_same_bits(curves[:, k], booster.predict(at_discount), f"discount {discount}")
