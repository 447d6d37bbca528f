"""Workloads A (cached DataFrame, noop write), B (Parquet in, score, Parquet out) and
C (what-if grid), plus the limit, the agreement check and treescore's time breakdown."""
import os
import time
from typing import Dict, List, Optional

import numpy as np

from bench import data, grid, session
from bench.config import CORES, GRID_LEVELS, Sizes
from bench.methods import BATCH_OFF, SPARK_METHODS, Context, treescore_scored
from bench.timing import Result, measure


class Bench:
    """Shared state of one benchmark run: the session, the data files, the results so far."""

    def __init__(self, spark, ctx: Context, sizes: Sizes, paths: List[str], work_dir: str, log=print):
        self.spark, self.ctx, self.sizes, self.paths, self.work_dir, self.log = spark, ctx, sizes, paths, work_dir, log
        self.pid = session.jvm_pid(spark)
        self.results: List[Result] = []
        self.agreement: Dict[str, Dict[str, float]] = {}
        self.diagnostics: Dict[str, object] = {}

    def read(self, rows: int):
        """The first `rows` rows from Parquet: one partition per file, as spark.read gives them."""
        from pyspark.sql import functions as F

        frame = self.spark.read.parquet(*data.files_for(self.paths, rows, self.sizes.chunk_rows))
        return frame if rows % self.sizes.chunk_rows == 0 else frame.where(F.col("id") < rows)

    def cached(self, rows: int, partitions: Optional[int] = None):
        """The first `rows` rows in equal partitions (a multiple of the core count), cached in
        memory and materialized before anything is timed."""
        if partitions is None:
            wanted = max(CORES, -(-rows // self.sizes.partition_rows))
            partitions = -(-wanted // CORES) * CORES
        frame = self.read(rows)
        files = len(data.files_for(self.paths, rows, self.sizes.chunk_rows))
        if rows % self.sizes.chunk_rows or files != partitions:  # else the files already are those partitions
            frame = frame.repartition(partitions)
        frame = frame.cache()
        frame.count()
        return frame

    def spark_result(self, workload: str, key: str, rows: int, action, conf: Optional[dict] = None,
                     note: str = "", param: Optional[int] = None, warm_up: bool = True) -> Result:
        session.collect_jvm_garbage(self.spark)
        with session.conf(self.spark, conf or {}):
            result = measure(Result(workload, key, rows, note=note, param=param), action, self.sizes.runs,
                             self.pid, warm_up=warm_up and self.sizes.warm_up, log=self.log)
        self.results.append(result)
        return result

    def limit_result(self, workload: str, rows: int, action, note: str = "") -> Result:
        """The limit runs in this process: its memory is this process's RSS alone."""
        result = measure(Result(workload, "limit", rows, note=note), action, self.sizes.runs, os.getpid(),
                         with_children=False, warm_up=self.sizes.warm_up, log=self.log)
        self.results.append(result)
        return result


def workload_a(bench: Bench) -> None:
    sizes, ctx = bench.sizes, bench.ctx
    frame = bench.cached(sizes.rows_a)
    sample = bench.cached(sizes.udf_rows_a)
    for method in SPARK_METHODS:
        source, rows, note = frame, sizes.rows_a, ""
        if method.sampled:
            source, rows = sample, sizes.udf_rows_a
            note = f"sampled: {rows:,} of {sizes.rows_a:,} rows"
        bench.spark_result("A", method.key, rows, lambda: session.noop_write(method.build(source, ctx)),
                           conf=method.conf, note=note)

    matrix = data.load_matrix(data.files_for(bench.paths, sizes.rows_a, sizes.chunk_rows), sizes.features, sizes.rows_a)
    limit = bench.limit_result("A", sizes.rows_a, lambda: ctx.ensemble.predict(matrix, num_threads=CORES))
    started = time.perf_counter()  # one single-thread predict: how much do LightGBM's 2 threads give here?
    ctx.ensemble.predict(matrix, num_threads=1)
    bench.diagnostics["limit_one_thread_rows_per_second"] = sizes.rows_a / (time.perf_counter() - started)
    if limit.ok:
        bench.diagnostics["limit_rows_per_second"] = limit.rows_per_second
    _agreement(bench, "A", frame, matrix)
    _treescore_breakdown(bench, frame)
    del matrix
    sample.unpersist()
    frame.unpersist()


def _compare(bench: Bench, workload: str, frames: Dict[str, object], order: List[str], expected: np.ndarray,
             conf: Optional[dict] = None) -> None:
    """Collects every method's scores in one Spark job (a union) and records max |score - expected|."""
    from pyspark.sql import functions as F

    tagged = [frame.withColumn("method", F.lit(key)) for key, frame in frames.items()]
    union = tagged[0]
    for frame in tagged[1:]:
        union = union.unionByName(frame)
    found = bench.agreement.setdefault(workload, {})
    try:
        with session.conf(bench.spark, conf or {}):
            collected = union.toPandas()
        for key, part in collected.groupby("method"):
            got = part.sort_values(order)["prediction"].to_numpy()
            found[key] = float(np.max(np.abs(got - expected))) if len(got) == len(expected) else "wrong row count"
    except Exception as error:
        for key in frames:
            found[key] = f"failed: {type(error).__name__}"


def _agreement(bench: Bench, workload: str, frame, matrix: np.ndarray, rows: int = 256) -> None:
    """Largest |difference| between each method's first scores and LightGBM's own predict."""
    from pyspark.sql import functions as F

    expected = bench.ctx.ensemble.predict(matrix[:rows], num_threads=1)
    small = frame.where(F.col("id") < rows)
    for conf in ({}, BATCH_OFF):  # the rule-off method needs its setting for the whole query
        frames = {m.key: m.build(small, bench.ctx) for m in SPARK_METHODS if m.conf == conf}
        _compare(bench, workload, frames, ["id"], expected, conf)


def _treescore_breakdown(bench: Bench, frame) -> None:
    """One more (untimed by the table) run of treescore batched, to read its operator's metrics."""
    scored = treescore_scored(frame, bench.ctx)
    started = time.perf_counter()
    metrics = session.batch_score_metrics(scored)
    wall = time.perf_counter() - started
    with session.conf(bench.spark, {"spark.treescore.batch.enabled": "false"}):
        fallback_planned = session.plan_has_batch_score(treescore_scored(frame, bench.ctx))
    bench.diagnostics["breakdown"] = {"metrics": metrics, "wall_seconds": wall, "cores": CORES,
                                      "rows": bench.sizes.rows_a}
    bench.diagnostics["plans"] = {"batched_has_BatchScore": metrics is not None,
                                  "fallback_has_BatchScore": fallback_planned}


def workload_b(bench: Bench) -> None:
    sizes, ctx = bench.sizes, bench.ctx
    for method in SPARK_METHODS:
        rows, note = sizes.rows_b, ""
        if method.sampled:
            rows = sizes.udf_rows_a
            note = f"sampled: {rows:,} of {sizes.rows_b:,} rows, repartitioned over {CORES} cores"
        out = os.path.join(bench.work_dir, "B", method.key)

        def job(method=method, rows=rows, out=out):
            frame = bench.read(rows)
            if method.sampled:  # the sample sits in one file: spread it over the cores
                frame = frame.repartition(CORES)
            method.build(frame, ctx).write.mode("overwrite").parquet(out)

        bench.spark_result("B", method.key, rows, job, conf=method.conf, note=note)
    # The limit has no I/O: B's floor is LightGBM's predict of B's rows, in memory.
    matrix = data.load_matrix(data.files_for(bench.paths, sizes.rows_b, sizes.chunk_rows), sizes.features, sizes.rows_b)
    bench.limit_result("B", sizes.rows_b, lambda: ctx.ensemble.predict(matrix, num_threads=CORES),
                       note="predict only, no I/O")


def workload_c(bench: Bench) -> None:
    sizes, ctx = bench.sizes, bench.ctx
    levels = data.discount_grid(GRID_LEVELS)
    frame = bench.cached(sizes.rows_c)
    sample = bench.cached(sizes.udf_rows_c)
    for key, how, build in grid.GRID_METHODS:
        if build is None:
            bench.results.append(Result("C", key, sizes.rows_c, status="pending (grid construct not landed)"))
            continue
        source, rows, note = frame, sizes.rows_c, how
        if key == "python_udf":
            source, rows = sample, sizes.udf_rows_c
            note = f"{how}; sampled: {rows:,} of {sizes.rows_c:,} rows"
        bench.spark_result("C", key, rows, lambda: session.noop_write(build(source, ctx, levels)), note=note)

    matrix = data.load_matrix(data.files_for(bench.paths, sizes.rows_c, sizes.chunk_rows), sizes.features, sizes.rows_c)
    bench.limit_result("C", sizes.rows_c, lambda: grid.limit(ctx.ensemble, matrix, levels, CORES),
                       note="loop over levels, predict with 2 threads")
    _grid_agreement(bench, frame, matrix, levels)
    sample.unpersist()
    frame.unpersist()


def _grid_agreement(bench: Bench, frame, matrix: np.ndarray, levels, rows: int = 16) -> None:
    from pyspark.sql import functions as F

    expected = grid.limit(bench.ctx.ensemble, matrix[:rows].copy(), levels, 1)
    small = frame.where(F.col("id") < rows)
    frames = {key: build(small, bench.ctx, levels) for key, _, build in grid.GRID_METHODS if build is not None}
    _compare(bench, "C", frames, ["id", "discount"], expected)
