"""The exactness suite: every kind, objective, input type and special value against
lightgbm.Booster.predict of the pinned version, compared bit for bit, on each engine."""
from decimal import Decimal

import lightgbm as lgb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.ml.linalg import Vectors
from pyspark.sql import functions as F

import treescore
from conftest import assert_same_bits, collect, plan_of

pytestmark = pytest.mark.usefixtures("engine")

N_FEATURES = 6
NAMES = [f"c{i}" for i in range(N_FEATURES)]
ROWS = 4_000
# NaN, infinities, signed zeros and values either side of LightGBM's zero threshold (1e-35).
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-35, -1e-35, 1.0000001e-35, 9.99e-36, 1e-300, -1e-300]


def make_features(rows, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, N_FEATURES))
    x[:, 2] = rng.integers(0, 8, size=rows)  # a categorical code column
    x[rng.random(x.shape) < 0.05] = 0.0
    x[rng.random(x.shape) < 0.03] = np.nan
    return x


def fit(objective, **extra):
    x = make_features(6_000, seed=5)
    s = np.nan_to_num(x)
    y = 1.5 * s[:, 0] - s[:, 1] ** 2 + (s[:, 2] % 3) + s[:, 3] * s[:, 4]
    params = {"objective": objective, "num_leaves": 15, "verbose": -1, "num_threads": 1, "seed": 7,
              "min_data_per_group": 5, "cat_smooth": 1}
    params.update(extra.pop("params", {}))
    if objective == "binary":
        label = (y > np.median(y)).astype(float)
    elif objective == "multiclass":
        label = np.digitize(y, np.quantile(y, [0.33, 0.66])).astype(float)
    elif objective == "lambdarank":
        label = np.digitize(y, np.quantile(y, [0.5, 0.8, 0.95])).astype(float)
    else:
        label = y
    dataset = lgb.Dataset(x, label, feature_name=NAMES, **extra)
    return lgb.train(params, dataset, 25)


MODELS = {
    "regression": lambda: fit("regression"),
    "binary": lambda: fit("binary"),
    "multiclass": lambda: fit("multiclass", params={"num_class": 3}),
    "lambdarank": lambda: fit("lambdarank", group=[20] * 300),
    "categorical": lambda: fit("regression", categorical_feature=[2]),
    "zero_as_missing": lambda: fit("regression", params={"zero_as_missing": True}),
}


@pytest.fixture(scope="module")
def boosters():
    return {name: build() for name, build in MODELS.items()}


@pytest.fixture(scope="module")
def rows(spark, tmp_path_factory):
    """Features with special values in every column, nulls, and negative categorical codes."""
    x = make_features(ROWS, seed=6)
    for j in range(N_FEATURES):
        x[j * len(SPECIAL):(j + 1) * len(SPECIAL), j] = SPECIAL
    x[200:210, 2] = [-1, -2, 100, 7.5, 2.0000001, 1e9, -0.0, 0.0, 3, np.nan]  # odd categorical inputs
    nulls = np.random.default_rng(8).random(x.shape) < 0.02
    path = str(tmp_path_factory.mktemp("matrix") / "rows.parquet")
    table = {"id": pa.array(np.arange(ROWS, dtype=np.int64))}
    table.update({n: pa.array(x[:, j], mask=nulls[:, j]) for j, n in enumerate(NAMES)})
    pq.write_table(pa.table(table), path)
    return spark.read.parquet(path), np.where(nulls, np.nan, x)


KINDS = {
    "prediction": {},
    "raw": {"raw_score": True},
    "leaf": {"pred_leaf": True},
    "contrib": {"pred_contrib": True},
}


@pytest.mark.parametrize("model_name", list(MODELS))
@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_and_objective(spark, boosters, rows, model_name, kind, engine):
    booster = boosters[model_name]
    df, x = rows
    model = treescore.Model.from_booster(booster)
    scored = df.select("id", treescore.score(model, kind=kind).alias("s"))
    assert f"on the {engine} engine" in plan_of(scored)
    assert model.engine(kind) == engine
    assert_same_bits(collect(scored), booster.predict(x, **KINDS[kind]))


def test_multiclass_prediction_is_an_array_per_row(spark, boosters, rows):
    df, _ = rows
    model = treescore.Model.from_booster(boosters["multiclass"])
    assert model.num_classes == 3
    field = df.select(treescore.score(model).alias("s")).schema["s"]
    assert field.dataType.simpleString() == "array<double>"


def test_categorical_features_are_reported(boosters):
    assert treescore.Model.from_booster(boosters["categorical"]).categorical_features == ["c2"]
    assert treescore.Model.from_booster(boosters["regression"]).categorical_features == []


@pytest.mark.parametrize("start, count", [(0, 10), (5, 10), (12, None)])
def test_iteration_ranges(spark, boosters, rows, start, count):
    booster = boosters["multiclass"]
    df, x = rows
    model = treescore.Model.from_booster(booster)
    scored = df.select("id", treescore.score(model, start_iteration=start, num_iterations=count).alias("s"))
    assert_same_bits(collect(scored), booster.predict(x, start_iteration=start, num_iteration=count))


# Each Spark type, with the same values lightgbm is given as float64.
TYPED = {
    "tinyint": (pa.int8(), np.int8),
    "smallint": (pa.int16(), np.int16),
    "int": (pa.int32(), np.int32),
    "bigint": (pa.int64(), np.int64),
    "float": (pa.float32(), np.float32),
    "double": (pa.float64(), np.float64),
}


@pytest.fixture(scope="module")
def integral_rows():
    rng = np.random.default_rng(9)
    x = rng.integers(-3, 8, size=(2_000, N_FEATURES)).astype(np.float64)
    nulls = rng.random(x.shape) < 0.03
    return x, nulls


@pytest.mark.parametrize("type_name", list(TYPED))
def test_every_numeric_column_type(spark, boosters, integral_rows, tmp_path, type_name):
    arrow_type, numpy_type = TYPED[type_name]
    x, nulls = integral_rows
    if numpy_type in (np.float32, np.float64):
        x = x + np.random.default_rng(3).normal(size=x.shape)
    typed = x.astype(numpy_type)
    table = {"id": pa.array(np.arange(len(x), dtype=np.int64))}
    table.update({n: pa.array(typed[:, j], type=arrow_type, mask=nulls[:, j]) for j, n in enumerate(NAMES)})
    path = str(tmp_path / "typed.parquet")
    pq.write_table(pa.table(table), path)
    df = spark.read.parquet(path)
    assert df.schema["c0"].dataType.simpleString() == type_name
    booster = boosters["categorical"]
    scored = df.select("id", treescore.score(treescore.Model.from_booster(booster)).alias("s"))
    expected = booster.predict(np.where(nulls, np.nan, typed.astype(np.float64)))
    assert_same_bits(collect(scored), expected)


def test_decimal_and_boolean_columns(spark, boosters, tmp_path):
    rng = np.random.default_rng(10)
    values = np.round(rng.normal(size=(1_000, N_FEATURES)) * 100, 3)
    flags = rng.random(1_000) < 0.5
    table = {"id": pa.array(np.arange(1_000, dtype=np.int64))}
    table.update({n: pa.array([Decimal(f"{v:.3f}") for v in values[:, j]], type=pa.decimal128(12, 3))
                  for j, n in enumerate(NAMES[:-1])})
    table[NAMES[-1]] = pa.array(flags)
    path = str(tmp_path / "decimal.parquet")
    pq.write_table(pa.table(table), path)
    df = spark.read.parquet(path)
    booster = boosters["regression"]
    scored = df.select("id", treescore.score(treescore.Model.from_booster(booster)).alias("s"))
    expected_input = np.column_stack([values[:, :-1], flags.astype(np.float64)])
    assert_same_bits(collect(scored), booster.predict(expected_input))


@pytest.mark.parametrize("element", ["float", "double"])
def test_array_columns(spark, boosters, rows, element):
    df, x = rows
    booster = boosters["binary"]
    model = treescore.Model.from_booster(booster)
    as_array = df.select("id", F.array(*[F.col(n).cast(element) for n in NAMES]).alias("features"))
    scored = as_array.select("id", treescore.score(model, "features").alias("s"))
    assert "BatchScore" in plan_of(scored)
    expected = booster.predict(x.astype(np.float32).astype(np.float64) if element == "float" else x)
    assert_same_bits(collect(scored), expected)


def test_vector_columns_dense_and_sparse(spark, boosters):
    booster = boosters["regression"]
    x = make_features(500, seed=12)
    x = np.nan_to_num(x)  # vectors hold numbers; absent sparse entries are zeros
    rows = []
    for i, row in enumerate(x):
        nonzero = np.flatnonzero(row)
        vector = Vectors.dense(row) if i % 2 else Vectors.sparse(N_FEATURES, nonzero, row[nonzero])
        rows.append((i, vector))
    df = spark.createDataFrame(rows, ["id", "features"]).repartition(3)
    scored = df.select("id", treescore.score(treescore.Model.from_booster(booster), "features").alias("s"))
    assert "BatchScore" in plan_of(scored)
    assert_same_bits(collect(scored), booster.predict(x))
