"""The ways to score the ensemble in Spark (workloads A and B), each a DataFrame builder.

Every builder takes a DataFrame with `id` and the feature columns and returns one with the
`keep` columns plus `prediction`, the weighted mean of the three members. Python methods
predict with one LightGBM thread per task (Spark runs one task per core).
"""
import functools
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, Sequence

import numpy as np
import pandas as pd

from bench import pyworker

# Report names, in report order. tests/test_bench_smoke.py checks that latest.md lists each.
METHODS = {
    "python_udf": "Python UDF (row at a time)",
    "pandas_udf": "pandas UDF (Series to Series)",
    "pandas_udf_iter": "pandas UDF (Iterator of Series)",
    "map_in_pandas": "mapInPandas",
    "map_in_arrow": "mapInArrow",
    "treescore_fallback": "treescore, rule off (row at a time)",
    "treescore_batched": "treescore batched",
    "limit": "limit: LightGBM predict in memory",
    "limit_engine": "limit: treescore's engine in memory",
}

# How each method gets its models, for the report.
MODEL_LOADING = {
    "python_udf": "once per worker process (module-level cache)",
    "pandas_udf": "once per worker process (module-level cache); features passed as one struct",
    "pandas_udf_iter": "once per task, at the start of the iterator; features passed as one struct",
    "map_in_pandas": "once per partition, as in the talk",
    "map_in_arrow": "once per partition; Arrow columns copied into a float64 matrix",
    "treescore_fallback": "once per executor JVM (treescore's model cache); spark.treescore.batch.enabled=false",
    "treescore_batched": "once per executor JVM (treescore's model cache); one BatchScore operator for all 3",
    "limit": "Booster.predict(num_threads=2) on a float64 C-contiguous matrix in memory, outside Spark",
    "limit_engine": "treescore's engine (ExactScorer.predict, num_threads=2) on the same matrix, outside Spark",
}


@dataclass
class Context:
    """What builders need: the ensemble as text (broadcast to Python workers) and as treescore models."""
    spark: object
    ensemble: object  # bench.models.Ensemble
    payload: object  # Broadcast of (texts, weights)
    key: str  # identifies the ensemble in the per-worker cache
    treescore_models: list = field(default_factory=list)

    @property
    def names(self):
        return self.ensemble.feature_names


def make_context(spark, ensemble) -> Context:
    import hashlib

    import treescore

    key = hashlib.sha256("".join(ensemble.texts).encode()).hexdigest()[:16]
    payload = spark.sparkContext.broadcast((ensemble.texts, ensemble.weights))
    models = [treescore.Model.from_string(t) for t in ensemble.texts]
    return Context(spark, ensemble, payload, key, models)


def python_udf(frame, ctx: Context, keep: Sequence[str] = ("id",)):
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType

    key, payload = ctx.key, ctx.payload

    def score_row(*values):
        return pyworker.cached_ensemble(key, payload).predict_row(values)

    udf = F.udf(score_row, DoubleType())
    return frame.select(*keep, udf(*ctx.names).alias("prediction"))


def pandas_udf(frame, ctx: Context, keep: Sequence[str] = ("id",)):
    from pyspark.sql import functions as F

    key, payload = ctx.key, ctx.payload

    @F.pandas_udf("double")
    def score_batch(features: pd.DataFrame) -> pd.Series:
        model = pyworker.cached_ensemble(key, payload)
        return pd.Series(model.predict(features.to_numpy(dtype=np.float64)))

    return frame.select(*keep, score_batch(F.struct(*ctx.names)).alias("prediction"))


def pandas_udf_iter(frame, ctx: Context, keep: Sequence[str] = ("id",)):
    from pyspark.sql import functions as F

    payload = ctx.payload

    @F.pandas_udf("double")
    def score_batches(batches: Iterator[pd.DataFrame]) -> Iterator[pd.Series]:
        model = pyworker.load_ensemble(payload)  # once per task
        for features in batches:
            yield pd.Series(model.predict(features.to_numpy(dtype=np.float64)))

    return frame.select(*keep, score_batches(F.struct(*ctx.names)).alias("prediction"))


def map_in_pandas(frame, ctx: Context, keep: Sequence[str] = ("id",)):
    payload, names, keep = ctx.payload, list(ctx.names), list(keep)

    def score_partition(batches):
        model = pyworker.load_ensemble(payload)  # once per partition
        for batch in batches:
            out = batch[keep].copy()
            prediction = model.predict(batch[names].to_numpy(dtype=np.float64))
            out["prediction"] = list(prediction) if prediction.ndim > 1 else prediction  # one array per row
            yield out

    return frame.mapInPandas(score_partition, _schema(frame, keep, ctx.ensemble.classes))


def map_in_arrow(frame, ctx: Context, keep: Sequence[str] = ("id",)):
    payload, names, keep = ctx.payload, list(ctx.names), list(keep)

    def score_partition(batches):
        import pyarrow as pa

        model = pyworker.load_ensemble(payload)  # once per partition
        for batch in batches:
            predicted = model.predict(pyworker.arrow_matrix(batch, names))
            if predicted.ndim > 1:  # one array per row, as Spark's array<double> arrives in Arrow
                offsets = pa.array(np.arange(0, predicted.size + 1, predicted.shape[1], dtype=np.int32))
                prediction = pa.ListArray.from_arrays(offsets, pa.array(predicted.reshape(-1)))
            else:
                prediction = pa.array(predicted)
            yield pa.RecordBatch.from_arrays([batch.column(k) for k in keep] + [prediction],
                                             names=keep + ["prediction"])

    return frame.mapInArrow(score_partition, _schema(frame, keep, ctx.ensemble.classes))


def treescore_expression(ctx: Context):
    """0.5*score(m1) + 0.3*score(m2) + 0.2*score(m3): one BatchScore operator scores all three.
    A single model of weight 1 is score(m) itself (for a multiclass model, its array)."""
    from treescore import score

    terms = [score(model) if weight == 1.0 else weight * score(model)
             for weight, model in zip(ctx.ensemble.weights, ctx.treescore_models)]
    return functools.reduce(lambda total, term: total + term, terms)


def treescore_scored(frame, ctx: Context, keep: Sequence[str] = ("id",)):
    return frame.select(*keep, treescore_expression(ctx).alias("prediction"))


def _schema(frame, keep, classes: int = 1) -> str:
    types = dict(frame.dtypes)
    return ", ".join(f"{k} {types[k]}" for k in keep) + (", prediction double" if classes == 1 else
                                                            ", prediction array<double>")


@dataclass(frozen=True)
class Method:
    key: str
    build: Callable
    conf: Dict[str, str] = field(default_factory=dict)
    sampled: bool = False  # too slow for every row: scores a sample

    @property
    def name(self) -> str:
        return METHODS[self.key]


BATCH_OFF = {"spark.treescore.batch.enabled": "false"}

# Spark methods in run order: treescore first, before any Python worker exists, so its memory
# peak is not inflated by idle workers left behind by the Python methods.
SPARK_METHODS = [
    Method("treescore_batched", treescore_scored),
    Method("treescore_fallback", treescore_scored, conf=BATCH_OFF),
    Method("map_in_pandas", map_in_pandas),
    Method("map_in_arrow", map_in_arrow),
    Method("pandas_udf", pandas_udf),
    Method("pandas_udf_iter", pandas_udf_iter),
    Method("python_udf", python_udf, sampled=True),
]
