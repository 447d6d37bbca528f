"""Model.load's sources: paths on any Hadoop file system, MLflow model directories, Boosters and
scikit-learn estimators, each scoring exactly as LightGBM does."""
import os

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest

from conftest import FEATURE_NAMES, assert_same_bits, features, target, write_parquet
from treescore import Model, score


def scores_of(spark, tmp_path, model, x):
    """treescore's scores for the rows x, in row order (a list of arrays for multiclass)."""
    path = str(tmp_path / "rows.parquet")
    write_parquet(path, x, np.isnan(x))
    rows = spark.read.parquet(path).select("id", score(model).alias("p")).orderBy("id").collect()
    return np.array([r["p"] for r in rows])


@pytest.fixture(scope="module")
def data():
    x = features(3_000, seed=17)
    return x, target(x)


def frame(x):
    return pd.DataFrame(x, columns=FEATURE_NAMES)


def test_a_path_object_a_file_uri_and_a_relative_path_load_the_same_model(spark, tmp_path, regression_booster):
    file = tmp_path / "model.txt"
    regression_booster.save_model(str(file))
    expected = Model.from_booster(regression_booster).content_hash
    relative = os.path.relpath(file)  # the JVM shares this process's working directory
    assert not relative.startswith("/")
    for source in (file, file.as_uri(), relative):
        assert Model.load(source).content_hash == expected, source


def test_a_path_on_another_hadoop_file_system_loads_through_spark_conf(spark, tmp_path, regression_booster):
    # viewfs:// is a Hadoop file system of its own, configured only through Hadoop keys in the
    # session conf; its mount table points at a local folder, as hdfs:// or s3a:// point at a cluster.
    regression_booster.save_model(str(tmp_path / "model.txt"))
    spark.conf.set("fs.viewfs.mounttable.treescoretest.link./models", tmp_path.as_uri())
    try:
        model = Model.load("viewfs://treescoretest/models/model.txt")
    finally:
        spark.conf.unset("fs.viewfs.mounttable.treescoretest.link./models")
    assert model.content_hash == Model.from_booster(regression_booster).content_hash


def test_an_mlflow_lightgbm_directory_loads_without_mlflow(spark, tmp_path, regression_booster, data):
    # Laid out as mlflow.lightgbm.save_model writes a Booster (MLflow 2.16.2's MLmodel plus the
    # serialization keys of MLflow 3): MLmodel names model.lgb, the Booster's own text format.
    directory = tmp_path / "model"
    directory.mkdir()
    regression_booster.save_model(str(directory / "model.lgb"))
    (directory / "MLmodel").write_text(
        "artifact_path: model\n"
        "flavors:\n"
        "  lightgbm:\n    code: null\n    data: model.lgb\n    lgb_version: 4.7.0\n"
        "    model_class: lightgbm.basic.Booster\n    serialization_format: cloudpickle\n"
        "    skops_trusted_types: null\n"
        "  python_function:\n    data: model.lgb\n    env:\n      conda: conda.yaml\n"
        "      virtualenv: python_env.yaml\n    loader_module: mlflow.lightgbm\n    python_version: 3.11.9\n"
        "mlflow_version: 2.16.2\nmodel_uuid: 019fe4c303744ca0ace54ecd6fa109ef\n")
    (directory / "requirements.txt").write_text("lightgbm==4.7.0\n")
    model = Model.load(directory)
    x = data[0]
    assert_same_bits(scores_of(spark, tmp_path, model, x), regression_booster.predict(x))


def test_a_pickled_sklearn_mlflow_model_is_refused_with_the_reason(spark, tmp_path):
    directory = tmp_path / "model"
    directory.mkdir()
    (directory / "model.pkl").write_bytes(b"\x80\x05not a pickle")
    (directory / "MLmodel").write_text("flavors:\n  lightgbm:\n    data: model.pkl\n"
                                       "    model_class: lightgbm.sklearn.LGBMRegressor\n")
    with pytest.raises(ValueError, match="unpickling runs arbitrary code"):
        Model.load(directory)


def test_a_booster_loads_directly(spark, regression_booster):
    assert Model.load(regression_booster).content_hash == Model.from_booster(regression_booster).content_hash


def test_lgbm_regressor_scores_equal_its_predict(spark, tmp_path, data):
    x, y = data
    est = lgb.LGBMRegressor(n_estimators=30, num_leaves=15, verbose=-1, n_jobs=1).fit(frame(x), y)
    model = Model.load(est)
    assert model.feature_names == FEATURE_NAMES
    assert_same_bits(scores_of(spark, tmp_path, model, x), est.predict(frame(x)))


def test_lgbm_classifier_binary_scores_equal_predict_proba_of_the_positive_class(spark, tmp_path, data):
    x, y = data
    est = lgb.LGBMClassifier(n_estimators=30, num_leaves=15, verbose=-1, n_jobs=1).fit(frame(x), y > 0)
    assert_same_bits(scores_of(spark, tmp_path, Model.load(est), x), est.predict_proba(frame(x))[:, 1])


def test_lgbm_classifier_multiclass_scores_equal_predict_proba(spark, tmp_path, data):
    x, y = data
    labels = np.digitize(y, np.quantile(y, [0.33, 0.66]))
    est = lgb.LGBMClassifier(n_estimators=20, num_leaves=15, verbose=-1, n_jobs=1).fit(frame(x), labels)
    scored = scores_of(spark, tmp_path, Model.load(est), x)
    assert scored.shape == (len(x), 3)
    assert_same_bits(scored, est.predict_proba(frame(x)))


def test_lgbm_ranker_scores_equal_its_predict(spark, tmp_path, data):
    x, y = data
    relevance = np.digitize(y, np.quantile(y, [0.5, 0.8]))
    est = lgb.LGBMRanker(n_estimators=20, num_leaves=15, verbose=-1, n_jobs=1)
    est.fit(frame(x), relevance, group=[100] * (len(x) // 100))
    assert_same_bits(scores_of(spark, tmp_path, Model.load(est), x), est.predict(frame(x)))


def test_an_unfitted_estimator_and_other_objects_are_clear_errors(spark):
    with pytest.raises(ValueError, match="the LGBMClassifier is not fitted; call fit"):
        Model.load(lgb.LGBMClassifier())
    with pytest.raises(TypeError, match="cannot make a model from a builtins.dict; expected a path"):
        Model.load({"not": "a model"})


def test_sha256_is_checked_for_in_memory_models_too(spark, regression_booster):
    model = Model.load(regression_booster, sha256=Model.from_booster(regression_booster).content_hash.upper())
    assert model.num_features == len(FEATURE_NAMES)
    with pytest.raises(ValueError, match="SHA-256 is"):
        Model.load(regression_booster, sha256="0" * 64)
