"""Workload C, the what-if grid: every row scored at each of 15 discount levels (feature f000).

Two shapes: explode the rows (cross join with the levels, then score as in A), or loop over
the levels inside each batch (mapInPandas, mapInArrow, the limit). treescore uses its grid
construct (score_grid over an Ensemble of the three models) where the installed treescore has
one; with an older treescore its C rows are reported as pending, never estimated. treescore
over exploded rows is measured separately as the workaround without the construct. Every
Spark method returns (id, discount, prediction), 15 rows per input row.
"""
import numpy as np

from bench import methods, pyworker
from bench.methods import BATCH_OFF

DISCOUNT = "f000"  # the what-if feature
KEEP = ("id", "discount")

# A C-only method, not one of the eight: treescore batched over rows exploded in Spark.
EXTRA_METHODS = {"treescore_batched_exploded": "treescore batched, exploded rows (workaround)"}


def explode(frame, levels):
    """Each row once per level, with the level in place of the discount feature."""
    from pyspark.sql import functions as F

    spark = frame.sparkSession
    grid = spark.createDataFrame([(float(level),) for level in levels], "discount double")
    others = [c for c in frame.columns if c not in ("id", DISCOUNT)]
    return frame.crossJoin(F.broadcast(grid)).select("id", "discount", F.col("discount").alias(DISCOUNT), *others)


def _exploding(build):
    def scored(frame, ctx, levels):
        return build(explode(frame, levels).select("id", "discount", *ctx.names), ctx, keep=KEEP)
    return scored


def has_grid_construct() -> bool:
    import treescore

    return hasattr(treescore, "score_grid") and hasattr(treescore, "Ensemble")


def treescore_grid(frame, ctx, levels):
    """score_grid over Ensemble(m1, m2, m3, weights, combine="sum"): w1*s1 + w2*s2 + w3*s3 in member
    order, as in A, at every level of f000, natively; its array<double> is exploded into rows
    so the output has the same shape as every other method's."""
    import treescore
    from pyspark.sql import functions as F

    ensemble = treescore.Ensemble(ctx.treescore_models, weights=list(ctx.ensemble.weights), combine="sum")
    curve = treescore.score_grid(ensemble, vary={DISCOUNT: [float(level) for level in levels]})
    values = F.array(*[F.lit(float(level)) for level in levels])
    return (frame.select("id", F.posexplode(curve).alias("position", "prediction"))
            .select("id", F.element_at(values, F.col("position") + 1).alias("discount"), "prediction"))


# Grid sizes whose cost the benchmark compares with one score of the same rows.
COST_POINTS = (1, 5, 15, 29)


# The grid-cost table's grid with a derived input: a second feature recomputed at every point.
DERIVED = {"f001": "f001 * (1 - f000)"}


def treescore_curves(frame, ctx, levels, derived=None):
    """The grid as treescore returns it: one array<double> per row, not exploded; with
    treescore_one_score, what the grid-cost table compares."""
    import treescore

    ensemble = treescore.Ensemble(ctx.treescore_models, weights=list(ctx.ensemble.weights), combine="sum")
    curve = treescore.score_grid(ensemble, vary={DISCOUNT: [float(v) for v in levels]}, derived=derived)
    return frame.select("id", curve.alias("curve"))


def treescore_one_score(frame, ctx):
    """The same ensemble scored once per row, at each row's own discount."""
    import treescore

    ensemble = treescore.Ensemble(ctx.treescore_models, weights=list(ctx.ensemble.weights), combine="sum")
    return frame.select("id", treescore.score(ensemble).alias("prediction"))


def _levels_frame(ids: np.ndarray, levels: np.ndarray):
    return np.repeat(ids, len(levels)), np.tile(levels, len(ids))


def _predict_grid(model, matrix: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Scores for every (row, level), row-major: row 0 at every level, then row 1, ..."""
    out = np.empty((len(matrix), len(levels)))
    for j, level in enumerate(levels):
        matrix[:, 0] = level  # f000 is column 0 of the matrix
        out[:, j] = model.predict(matrix)
    return out.ravel()


def map_in_pandas_loop(frame, ctx, levels):
    import pandas as pd

    payload, names, levels = ctx.payload, list(ctx.names), np.asarray(levels, dtype=np.float64)

    def score_partition(batches):
        model = pyworker.load_ensemble(payload)  # once per partition
        for batch in batches:
            matrix = batch[names].to_numpy(dtype=np.float64)
            ids, discounts = _levels_frame(batch["id"].to_numpy(), levels)
            yield pd.DataFrame({"id": ids, "discount": discounts, "prediction": _predict_grid(model, matrix, levels)})

    return frame.mapInPandas(score_partition, "id long, discount double, prediction double")


def map_in_arrow_loop(frame, ctx, levels):
    payload, names, levels = ctx.payload, list(ctx.names), np.asarray(levels, dtype=np.float64)

    def score_partition(batches):
        import pyarrow as pa

        model = pyworker.load_ensemble(payload)  # once per partition
        for batch in batches:
            matrix = pyworker.arrow_matrix(batch, names)
            ids, discounts = _levels_frame(batch.column("id").to_numpy(), levels)
            scores = _predict_grid(model, matrix, levels)
            yield pa.RecordBatch.from_arrays([pa.array(ids), pa.array(discounts), pa.array(scores)],
                                             names=["id", "discount", "prediction"])

    return frame.mapInArrow(score_partition, "id long, discount double, prediction double")


def limit(ensemble, matrix: np.ndarray, levels, threads: int, engine: str = "lightgbm") -> np.ndarray:
    class Model:  # the limit's ensemble, predicting with every thread
        @staticmethod
        def predict(x):
            return ensemble.predict(x, num_threads=threads, engine=engine)

    return _predict_grid(Model, matrix, np.asarray(levels, dtype=np.float64))


PENDING = "pending (grid construct not landed)"
_GRID = has_grid_construct()
_HOW = "treescore's grid construct (score_grid), exploded to rows"

# (method key, how it handles the grid, builder or None for pending, session settings)
GRID_METHODS = [
    ("treescore_batched", _HOW if _GRID else PENDING, treescore_grid if _GRID else None, {}),
    ("treescore_fallback", _HOW + "; rule off" if _GRID else PENDING, treescore_grid if _GRID else None, BATCH_OFF),
    ("treescore_batched_exploded", "explode rows, then treescore batched (workaround)",
     _exploding(methods.treescore_scored), {}),
    ("map_in_pandas", "loop over levels inside each batch", map_in_pandas_loop, {}),
    ("map_in_arrow", "loop over levels inside each batch", map_in_arrow_loop, {}),
    ("pandas_udf", "explode rows", _exploding(methods.pandas_udf), {}),
    ("pandas_udf_iter", "explode rows", _exploding(methods.pandas_udf_iter), {}),
    ("python_udf", "explode rows", _exploding(methods.python_udf), {}),
]
