"""Shared fixtures: one local Spark session with treescore, small trained models, and a fresh
virtual environment with the built wheel installed."""
import glob
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pyspark
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import treescore

# Checks of one Spark line's jar, collected only when that line's pyspark runs the tests.
collect_ignore = [] if pyspark.__version__.startswith("3.5.") else ["test_spark35_on_java11.py"]

NUM_FEATURES = 8
FEATURE_NAMES = [f"x{i}" for i in range(NUM_FEATURES)]


@pytest.fixture(scope="session")
def spark():
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("treescore-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "4")
    )
    session = treescore.configure(builder).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(params=["treescore", "lightgbm"])
def engine(request, spark):
    """Runs a test once on each engine (spark.treescore.engine), then restores the default, auto."""
    spark.conf.set("spark.treescore.engine", request.param)
    yield request.param
    spark.conf.unset("spark.treescore.engine")


def features(rows: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, NUM_FEATURES))
    x[rng.random(x.shape) < 0.02] = np.nan
    return x


def target(x: np.ndarray) -> np.ndarray:
    s = np.nan_to_num(x)
    return 2 * s[:, 0] - s[:, 1] ** 2 + np.sin(3 * s[:, 2]) + s[:, 3] * s[:, 4]


def train(objective: str, rounds: int = 40, seed: int = 3) -> lgb.Booster:
    x = features(20_000, seed)
    y = target(x)
    label = y if objective == "regression" else (y > 0).astype(float)
    params = {"objective": objective, "num_leaves": 31, "verbose": -1, "num_threads": 1, "seed": seed}
    return lgb.train(params, lgb.Dataset(x, label, feature_name=FEATURE_NAMES), rounds)


@pytest.fixture(scope="session")
def regression_booster() -> lgb.Booster:
    return train("regression")


@pytest.fixture(scope="session")
def binary_booster() -> lgb.Booster:
    return train("binary")


def write_parquet(path: str, x: np.ndarray, null_mask: np.ndarray) -> None:
    """Features as a Parquet file with true nulls where null_mask is set, plus a row id."""
    columns = {"id": pa.array(np.arange(len(x), dtype=np.int64))}
    for j, name in enumerate(FEATURE_NAMES):
        columns[name] = pa.array(x[:, j], mask=null_mask[:, j])
    pq.write_table(pa.table(columns), path, row_group_size=20_000)


def model_and_rows(folder: Path, booster, rows: int, seed: int) -> np.ndarray:
    """`booster` as folder/model.txt and `rows` rows of features (NaN as null) as folder/rows.parquet,
    for jobs in other processes; returns Booster.predict of those rows."""
    booster.save_model(str(folder / "model.txt"))
    x = features(rows, seed)
    write_parquet(str(folder / "rows.parquet"), x, np.isnan(x))
    return booster.predict(x)


def feature_frame(spark, folder, rows: int, seed: int):
    """`rows` rows of features without nulls, written to Parquet in `folder` and read back."""
    x = features(rows, seed)
    path = str(folder / "rows.parquet")
    write_parquet(path, x, np.zeros(x.shape, dtype=bool))
    return spark.read.parquet(path), x


def market_frame(spark, folder, rows: int, seed: int):
    """feature_frame plus a string column `market` cycling DE, FR, IT by id, and those markets."""
    df, x = feature_frame(spark, folder, rows, seed)
    names = ["DE", "FR", "IT"]
    df = df.withColumn("market", F.element_at(F.array(*[F.lit(m) for m in names]), (F.col("id") % 3 + 1).cast("int")))
    return df, x, np.array(names)[np.arange(len(x)) % 3]


def thresholds(booster) -> dict:
    """Every numerical split threshold of the model, by feature index."""
    found = {}

    def walk(node):
        if "split_index" in node:
            if node["decision_type"] == "<=":
                found.setdefault(node["split_feature"], set()).add(float(node["threshold"]))
            walk(node["left_child"])
            walk(node["right_child"])

    for tree in booster.dump_model()["tree_info"]:
        walk(tree["tree_structure"])
    return found


def plan_of(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def batch_score_nodes(df):
    """The BatchScore nodes of df's executed plan (run it first: adaptive plans are final then),
    looking inside adaptive plans and their query stages."""
    stack = [df._jdf.queryExecution().executedPlan()]
    while stack:
        node = stack.pop()
        name = node.getClass().getSimpleName()
        if name == "AdaptiveSparkPlanExec":
            stack.append(node.executedPlan())
        elif name.endswith("QueryStageExec"):
            stack.append(node.plan())
        if node.nodeName() == "BatchScore":
            yield node
        children = node.children()
        stack.extend(children.apply(i) for i in range(children.size()))


def batch_score_inputs(df) -> list:
    """For each BatchScore node of df's executed plan, which input it read ("column vectors" or
    "rows") and the node name of its child."""
    return [("column vectors" if "columnar input" in node.simpleString(100) else "rows", node.child().nodeName())
            for node in batch_score_nodes(df)]


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RELEASE_PYTHON = os.path.join(ROOT, "target", "release", "python")
# dev/release's Maven repository, as a URL for spark.jars.repositories, --repositories and sbt.
MAVEN_REPOSITORY = Path(ROOT, "target", "release", "maven").as_uri()


def built_wheel() -> str:
    """The wheel dev/release built into target/release/python/."""
    wheels = glob.glob(os.path.join(RELEASE_PYTHON, "treescore-*.whl"))
    assert len(wheels) == 1, f"expected exactly one built wheel in {RELEASE_PYTHON}, found {wheels}"
    return wheels[0]


@dataclass
class WheelVenv:
    python: str      # the venv's interpreter
    spark_home: str  # the Spark that its pyspark ships (bin/spark-class, jars/)

    def env(self) -> dict:
        """The environment for running its python from outside the source tree."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "SPARK_HOME")}
        env["SPARK_LOCAL_IP"] = "127.0.0.1"
        return env


@pytest.fixture(scope="session")
def wheel_venv(tmp_path_factory) -> WheelVenv:
    """A fresh virtualenv with only the built wheel (and its demo extras) installed, as a user would,
    next to the pyspark release these tests run on."""
    venv = tmp_path_factory.mktemp("wheel") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    install = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", f"{built_wheel()}[demo]",
                              f"pyspark=={pyspark.__version__}"],
                             capture_output=True, text=True, timeout=900)
    assert install.returncode == 0, install.stderr
    python = str(venv / "bin" / "python")
    homes = glob.glob(str(venv / "lib" / "python*" / "site-packages" / "pyspark"))
    assert len(homes) == 1, homes
    return WheelVenv(python, homes[0])


def collect(df, column: str = "s", order: str = "id") -> np.ndarray:
    """One column of `df`, ordered by `order`, as a NumPy array (array columns stacked to 2-D)."""
    values = df.orderBy(order).toPandas()[column].to_numpy()
    if values.dtype == object:  # array columns
        values = np.stack([np.asarray(v) for v in values])
    return values


def assert_same_bits(actual, expected, what: str = "values") -> None:
    """Asserts bit-for-bit equality: floats are compared as their 64-bit patterns, so -0.0 differs
    from 0.0 and a NaN's payload counts, where `==` and np.array_equal would let both pass."""
    actual = np.asarray(actual)
    expected = np.asarray(expected).reshape(actual.shape)
    if actual.dtype.kind == "f" or expected.dtype.kind == "f":
        actual_bits = actual.astype(np.float64).view(np.uint64)
        expected_bits = expected.astype(np.float64).view(np.uint64)
    else:
        actual_bits, expected_bits = actual, expected
    differ = np.flatnonzero((actual_bits != expected_bits).ravel())
    assert differ.size == 0, (f"{what}: {differ.size} of {actual.size} differ in their bits; first at flat index "
                              f"{differ[0]}: {actual.ravel()[differ[0]]!r} != {expected.ravel()[differ[0]]!r}")
