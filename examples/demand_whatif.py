"""The talk's workload in treescore: a demand ensemble of three boosters (expm1, then clipped at
0), routed by market, scored on a 15-point discount grid with a derived price feature and a
monotone curve -- in one batched native pass, with no Python on the executors.

Run: python examples/demand_whatif.py        (needs treescore installed, e.g. via ./dev/build)
"""
import math
import os
import sys
import tempfile

import lightgbm as lgb
import numpy as np
import pandas as pd
from pyspark.sql import SparkSession

import treescore

FEATURES = ["price_after", "discount", "store_size", "season", "promo_weeks"]
MARKETS = ["DE", "FR", "IT"]
DISCOUNTS = [round(0.05 * i, 2) for i in range(15)]  # 0.0 .. 0.7


def make_sales(rows: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "market": rng.choice(MARKETS, size=rows),
        "price": rng.uniform(5, 50, size=rows),
        "discount": rng.choice(DISCOUNTS, size=rows),
        "store_size": rng.uniform(100, 2000, size=rows),
        "season": rng.integers(0, 4, size=rows).astype(float),
        "promo_weeks": rng.integers(0, 10, size=rows).astype(float),
    })
    frame["price_after"] = frame["price"] * (1 - frame["discount"])
    return frame


def train_demand_models(sales: pd.DataFrame):
    """Three boosters predicting log1p(units) with different settings, as teams ensemble them."""
    rng = np.random.default_rng(0)
    units = np.exp(3 - 0.04 * sales["price_after"] + 2.5 * sales["discount"] + 0.0005 * sales["store_size"]
                   + 0.1 * sales["season"]) * rng.uniform(0.8, 1.2, size=len(sales))
    dataset = lgb.Dataset(sales[FEATURES].to_numpy(), np.log1p(units), feature_name=FEATURES, free_raw_data=False)
    settings = [dict(num_leaves=31, learning_rate=0.1), dict(num_leaves=15, learning_rate=0.05),
                dict(num_leaves=63, learning_rate=0.1, feature_fraction=0.8)]
    return [lgb.train({"objective": "regression", "verbose": -1, "num_threads": 1, "seed": i, **s}, dataset, 60)
            for i, s in enumerate(settings)]


def demand_scorer(models):
    ensemble = lambda weights: treescore.Ensemble(models, weights=weights, transform=["expm1", ("clip", 0, None)])
    return treescore.Routed("market", {"DE": ensemble([0.5, 0.3, 0.2]), "FR": ensemble([0.2, 0.3, 0.5])},
                            default=ensemble([1, 1, 1]))


def score_curves(spark, sales: pd.DataFrame, boosters):
    models = [treescore.Model.from_booster(b) for b in boosters]
    scorer = demand_scorer(models)
    frame = spark.createDataFrame(sales.drop(columns=["price_after"])).repartition(4)
    return frame.select("market", "price", "store_size", "season", "promo_weeks", treescore.score_grid(
        scorer, vary={"discount": DISCOUNTS}, derived={"price_after": "price * (1 - discount)"},
        monotone="increasing").alias("units_curve"))


def reference_curves(sales: pd.DataFrame, boosters) -> np.ndarray:
    """The same numbers from lightgbm.Booster.predict and NumPy, one grid point at a time."""
    weights = {"DE": [0.5, 0.3, 0.2], "FR": [0.2, 0.3, 0.5]}
    curves = np.empty((len(sales), len(DISCOUNTS)))
    for k, d in enumerate(DISCOUNTS):
        x = sales[FEATURES].to_numpy().copy()
        x[:, 0] = sales["price"].to_numpy() * (1 - d)
        x[:, 1] = d
        predictions = [b.predict(x) for b in boosters]
        for i, market in enumerate(sales["market"]):
            w = weights.get(market, [1.0, 1.0, 1.0])
            total = 0.0
            for weight, p in zip(w, predictions):  # member order, as treescore documents
                total += weight * p[i]
            curves[i, k] = max(math.expm1(total / sum(w)), 0.0)  # libm's expm1, like the native code
    return np.maximum.accumulate(curves, axis=1)  # the monotone (increasing) curve


def main(rows: int = 20_000) -> int:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sales = make_sales(rows, seed=1)
    boosters = train_demand_models(make_sales(20_000, seed=2))
    spark = treescore.configure(SparkSession.builder.master("local[2]").appName("demand what-if")).getOrCreate()
    try:
        scored = score_curves(spark, sales, boosters)
        plan = scored._jdf.queryExecution().executedPlan().toString()
        result = scored.toPandas()
        ours = np.stack(result["units_curve"].to_numpy())
        # The reference scores the rows Spark returned, in the order it returned them.
        expected = reference_curves(result.assign(price_after=0.0, discount=0.0), boosters)
        print(result.head(3).to_string())
        print(f"batched operators in the plan: {plan.count('BatchScore [')}")
        with tempfile.TemporaryDirectory() as folder:
            demand_scorer([treescore.Model.from_booster(b) for b in boosters]).save(os.path.join(folder, "demand"))
            reloaded = treescore.load(os.path.join(folder, "demand"))
            print(f"saved and reloaded: {reloaded}")
        if np.array_equal(ours, expected):
            print(f"curves equal the lightgbm + NumPy reference for all {rows:,} rows x {len(DISCOUNTS)} discounts")
            return 0
        print(f"CURVES DIFFER in {int((ours != expected).sum())} of {ours.size} values")
        return 1
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20_000))
