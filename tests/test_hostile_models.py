"""Hostile and unusual model files: each is refused on the driver with an error naming the file
and the problem, or scores exactly like lightgbm 4.7.0. (Damaged-text fuzzing: ModelFuzzSuite;
structural checks one by one: ModelTextSuite.)"""
import gzip
import importlib.util
import json
import os
import pickle

import lightgbm as lgb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

import treescore
from conftest import assert_same_bits
from treescore.errors import InvalidModelError

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")


def frame(spark, tmp_path, x, names):
    """x as Parquet columns called `names`, plus a row id, read back."""
    table = {"id": pa.array(np.arange(len(x), dtype=np.int64))}
    table.update({name: pa.array(x[:, j]) for j, name in enumerate(names)})
    path = str(tmp_path / "rows.parquet")
    pq.write_table(pa.table(table), path)
    return spark.read.parquet(path)


def scores(df, column, *features):
    pdf = df.select("id", treescore.score(column, *features).alias("s")).orderBy("id").toPandas()
    values = pdf["s"].to_numpy()
    return np.stack([np.asarray(v) for v in values]) if values.dtype == object else values


@pytest.fixture(scope="module")
def small_booster():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(2_000, 3))
    params = {"objective": "regression", "num_leaves": 7, "verbose": -1, "num_threads": 1, "seed": 1}
    return lgb.train(params, lgb.Dataset(x, x[:, 0] - x[:, 1] * x[:, 2], feature_name=["a", "b", "c"]), 5)


def refused(spark, path) -> str:
    with pytest.raises(InvalidModelError) as error:
        treescore.Model.load(str(path))
    message = str(error.value)
    assert f"model file '{path}'" in message, message
    return message


def test_empty_file(spark, tmp_path):
    path = tmp_path / "empty.txt"
    path.write_bytes(b"")
    assert refused(spark, path).endswith("the text is empty")


def test_truncated_file(spark, tmp_path, small_booster):
    text = small_booster.model_to_string()
    path = tmp_path / "truncated.txt"
    path.write_text(text[: len(text) // 2])
    assert "truncated" in refused(spark, path)


@pytest.mark.parametrize("kind", ["random bytes", "gzip", "pickle"])
def test_binary_files_are_named_binary(spark, tmp_path, small_booster, kind):
    text = small_booster.model_to_string().encode()
    content = {
        "random bytes": np.random.default_rng(1).integers(0, 256, size=100_000, dtype=np.uint8).tobytes(),
        "gzip": gzip.compress(text),
        "pickle": pickle.dumps(small_booster),
    }[kind]
    path = tmp_path / "model.bin"
    path.write_bytes(content)
    message = refused(spark, path)
    assert "it is binary data, not text" in message and "save_model()" in message, message


def test_json_dump_is_named_json(spark, tmp_path, small_booster):
    path = tmp_path / "model.json"
    path.write_text(json.dumps(small_booster.dump_model()))
    message = refused(spark, path)
    assert "it is JSON (as booster.dump_model() gives), not a text model" in message, message


def test_byte_order_mark_is_named(spark, tmp_path, small_booster):
    path = tmp_path / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbf" + small_booster.model_to_string().encode())
    assert "byte order mark" in refused(spark, path)


def test_model_from_lightgbm_3_3_5_scores_like_lightgbm_4_7(spark, tmp_path):
    path = os.path.join(FIXTURES, "lightgbm_3_3_5", "model.txt")
    spec = importlib.util.spec_from_file_location("make_model", os.path.join(FIXTURES, "lightgbm_3_3_5", "make_model.py"))
    make_model = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_model)
    with open(path) as f:
        assert "version=v3" in f.read()
    model = treescore.Model.load(path)
    assert model.categorical_features == ["x4"]
    x = make_model.features(5_000, seed=7)
    x[:20, 4] = [-1, 7, 100, 2.5, np.nan, 0, 1, 2, 3, 4, 5, -0.0, 1e9, 6, 3, 3, 2, 1, 0, np.inf]
    df = frame(spark, tmp_path, x, model.feature_names)
    assert_same_bits(scores(df, model), lgb.Booster(model_file=path).predict(x))


def test_single_leaf_trees_score_exactly(spark, tmp_path):
    rng = np.random.default_rng(12)
    x = rng.normal(size=(3_000, 4))
    # Class 2 is random noise, so with a high min_gain_to_split its trees never split.
    label = np.where(x[:, 0] > 0, 0, 1)
    label[rng.random(len(label)) < 0.15] = 2
    params = {"objective": "multiclass", "num_class": 3, "min_gain_to_split": 40, "num_leaves": 4,
              "verbose": -1, "num_threads": 1}
    multiclass = lgb.train(params, lgb.Dataset(x, label), 10)
    constant = lgb.train({"objective": "regression", "verbose": -1, "num_threads": 1},
                         lgb.Dataset(x, np.full(len(x), 2.5)), 5)  # one tree, one leaf
    for booster in (multiclass, constant):
        leaves = [line for line in booster.model_to_string().splitlines() if line.startswith("num_leaves=")]
        assert "num_leaves=1" in leaves
        model = treescore.Model.from_booster(booster)
        df = frame(spark, tmp_path, x, model.feature_names)
        assert_same_bits(scores(df, model), booster.predict(x))
        assert_same_bits(scores(df, model, F.array(*model.feature_names)), booster.predict(x))


def test_non_ascii_feature_names_are_read_by_name(spark, tmp_path):
    names = ["größe", "prix_€", "日本語", "naïve"]
    rng = np.random.default_rng(13)
    x = rng.normal(size=(2_000, 4))
    booster = lgb.train({"objective": "regression", "verbose": -1, "num_threads": 1, "num_leaves": 7},
                        lgb.Dataset(x, x[:, 0] * x[:, 1] + x[:, 2] - x[:, 3], feature_name=names), 8)
    model = treescore.Model.from_booster(booster)
    assert model.feature_names == names
    df = frame(spark, tmp_path, x, names)
    assert_same_bits(scores(df, model), booster.predict(x))
    reversed_frame = df.select("id", *reversed(names))  # read by name, not by position
    assert_same_bits(scores(reversed_frame, model), booster.predict(x))


def test_duplicate_feature_names_are_refused_by_name_but_score_by_position(spark, tmp_path, small_booster):
    # LightGBM refuses duplicate names when it trains, but an edited file can hold them.
    text = small_booster.model_to_string().replace("feature_names=a b c", "feature_names=a b a")
    assert "feature_names=a b a" in text
    model = treescore.Model.from_string(text)
    assert model.feature_names == ["a", "b", "a"]
    rng = np.random.default_rng(14)
    x = rng.normal(size=(500, 3))
    df = frame(spark, tmp_path, x, ["p", "q", "r"]).withColumn("a", F.col("p")).withColumn("b", F.col("q"))
    with pytest.raises(ValueError) as error:
        treescore.score(model)
    message = str(error.value)
    assert "gives the same name to more than one feature: 'a' (features 0, 2)" in message, message
    assert "pass one column per feature, in the model's order" in message, message
    with pytest.raises(ValueError, match="'a' \\(features 0, 2\\)"):
        treescore.score(treescore.ensembles.Ensemble([model, model]))
    expected = lgb.Booster(model_str=text).predict(x)
    assert_same_bits(scores(df, model, "p", "q", "r"), expected)


def test_crlf_line_ends_are_named(spark, tmp_path, small_booster):
    path = tmp_path / "crlf.txt"
    path.write_bytes(small_booster.model_to_string().replace("\n", "\r\n").encode())
    assert "its lines end in CRLF" in refused(spark, path)
