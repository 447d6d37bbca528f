"""treescore in a Spark ML Pipeline: VectorAssembler -> a LightGBM model -> an ensemble of two
models reading plain columns; the fitted Pipeline is saved, loaded back and scores the same,
equal to lightgbm's own Booster.predict.

Run: python examples/ml_pipeline.py        (needs treescore installed, e.g. via ./dev/build)
"""
import os
import sys
import tempfile

import lightgbm as lgb
import numpy as np
import pandas as pd
from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.feature import VectorAssembler
from pyspark.sql import SparkSession

import treescore
from treescore.ml import ScoreTransformer

FEATURES = ["tenure", "monthly_spend", "support_calls", "discount"]


def make_customers(rows: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "id": np.arange(rows),
        "tenure": rng.integers(0, 72, size=rows).astype(float),
        "monthly_spend": rng.uniform(10, 120, size=rows),
        "support_calls": rng.poisson(1.5, size=rows).astype(float),
        "discount": rng.choice([0.0, 0.1, 0.2], size=rows),
    })


def train_churn_models(customers: pd.DataFrame):
    """Two churn classifiers trained with different settings, to be blended."""
    rng = np.random.default_rng(0)
    logit = (-0.05 * customers["tenure"] + 0.02 * customers["monthly_spend"] + 0.6 * customers["support_calls"]
             - 3 * customers["discount"] - 0.5)
    churned = (rng.random(len(customers)) < 1 / (1 + np.exp(-logit))).astype(float)
    dataset = lgb.Dataset(customers[FEATURES].to_numpy(), churned, feature_name=FEATURES, free_raw_data=False)
    return [lgb.train({"objective": "binary", "verbose": -1, "num_threads": 1, "seed": i, "num_leaves": leaves},
                      dataset, 40) for i, leaves in enumerate([15, 31])]


def build_pipeline(boosters) -> Pipeline:
    first, second = (treescore.Model.from_booster(b) for b in boosters)
    return Pipeline(stages=[
        VectorAssembler(inputCols=FEATURES, outputCol="features"),
        # A model reads one vector column...
        ScoreTransformer(first, featuresCol="features", outputCol="churn"),
        # ...or, like ensembles, routes, cascades and grids, the columns named like its features.
        ScoreTransformer(treescore.Ensemble([first, second], weights=[0.5, 0.5]), outputCol="churn_blend"),
    ])


def main(rows: int = 20_000) -> int:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    boosters = train_churn_models(make_customers(20_000, seed=2))
    customers = make_customers(rows, seed=1)
    spark = treescore.configure(SparkSession.builder.master("local[2]").appName("ml pipeline")).getOrCreate()
    try:
        frame = spark.createDataFrame(customers).repartition(4)
        fitted = build_pipeline(boosters).fit(frame)
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "churn-pipeline")
            fitted.write().save(path)
            loaded = PipelineModel.load(path)
            print(f"saved and loaded: {[type(s).__name__ for s in loaded.stages]}")
            columns = ["id", "churn", "churn_blend"]
            before = fitted.transform(frame).select(*columns).toPandas().sort_values("id")
            after = loaded.transform(frame).select(*columns).toPandas().sort_values("id")
        print(after.head(3).to_string(index=False))
        x = customers.sort_values("id")[FEATURES].to_numpy()
        first, second = (b.predict(x) for b in boosters)
        expected_blend = np.array([(0.5 * a + 0.5 * b) / (0.5 + 0.5) for a, b in zip(first, second)])
        same = (np.array_equal(after["churn"].to_numpy(), before["churn"].to_numpy())
                and np.array_equal(after["churn_blend"].to_numpy(), before["churn_blend"].to_numpy()))
        exact = (np.array_equal(after["churn"].to_numpy(), first)
                 and np.array_equal(after["churn_blend"].to_numpy(), expected_blend))
        if same and exact:
            print(f"the loaded pipeline scores equal the saved one and lightgbm for all {rows:,} rows")
            return 0
        print(f"SCORES DIFFER: loaded == fitted: {same}, equal to lightgbm: {exact}")
        return 1
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20_000))
