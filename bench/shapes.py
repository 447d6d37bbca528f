"""Workload A on other model shapes: the ensemble's cached rows scored by one model of each
shape the engines section measures in memory (1,000 trees x 15 leaves, 100 trees x 255 leaves,
500 trees x 63 leaves, 10 classes, categorical splits, linear trees), with treescore, mapInPandas and mapInArrow in Spark and with
LightGBM's predict and treescore's engine in memory. Every model reads the first columns of
the same table (bench.data), named as the table names them."""
import dataclasses

from bench import data, engines, models, session
from bench.config import CORES
from bench.methods import SPARK_METHODS, make_context

WORKLOAD = "shapes"
METHOD_KEYS = ("treescore_batched", "map_in_pandas", "map_in_arrow")


def model_shapes(bench) -> None:
    from pyspark.sql import functions as F

    sizes = bench.sizes
    rows = sizes.rows_shapes
    cached = bench.cached(rows)
    full_matrix = bench.matrix(rows)
    for shape in engines.SHAPES[1:]:  # the first is A's own member
        shape = dataclasses.replace(shape, features=min(shape.features, sizes.features))  # smoke data is narrower
        names = data.feature_names(shape.features)
        model = models.of_texts([engines.train(shape, sizes, bench.log)], (1.0,), names)
        ctx = make_context(bench.spark, model)
        frame = cached.select("id", *names)
        warm = frame.where(F.col("id") < max(1, sizes.warm_rows))  # a filter, not a limit: no Python worker is cut off
        for method in (m for m in SPARK_METHODS if m.key in METHOD_KEYS):
            bench.spark_result(WORKLOAD, method.key, rows, lambda: session.noop_write(method.build(frame, ctx)),
                               warm_up=lambda: session.noop_write(method.build(warm, ctx)), conf=method.conf,
                               note=shape.name)
        matrix = full_matrix[:, :shape.features].copy()
        small = matrix[: max(1, sizes.warm_rows)]
        for key, engine in (("limit", "lightgbm"), ("limit_engine", "treescore")):
            bench.limit_result(WORKLOAD, rows, lambda: model.predict(matrix, CORES, engine=engine),
                               warm_up=lambda: model.predict(small, CORES, engine=engine), note=shape.name, method=key)
    cached.unpersist()
