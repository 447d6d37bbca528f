"""Workloads A (cached DataFrame, noop write), B (Parquet in, score, Parquet out) and
C (what-if grid), plus the limit, the agreement check and treescore's time breakdown."""
import os
from typing import Dict, List, Optional

import numpy as np

from bench import data, grid, session
from bench.config import CORES, GRID_LEVELS, Sizes
from bench.methods import SPARK_METHODS, Context, treescore_scored
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

    def cached(self, rows: int):
        """The first `rows` rows, cached in memory and materialized before anything is timed."""
        frame = self.read(rows).cache()
        frame.count()
        return frame

    def spark_result(self, workload: str, key: str, rows: int, action, conf: Optional[dict] = None,
                     note: str = "", param: Optional[int] = None, warm_up: bool = True) -> Result:
        session.collect_jvm_garbage(self.spark)
        with session.conf(self.spark, conf or {}):
            result = measure(Result(workload, key, rows, note=note, param=param), action, self.sizes.runs,
                             self.pid, warm_up=warm_up, log=self.log)
        self.results.append(result)
        return result

    def limit_result(self, workload: str, rows: int, action, note: str = "") -> Result:
        """The limit runs in this process: its memory is this process's RSS alone."""
        result = measure(Result(workload, "limit", rows, note=note), action, self.sizes.runs, os.getpid(),
                         with_children=False, log=self.log)
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
    bench.limit_result("A", sizes.rows_a, lambda: ctx.ensemble.predict(matrix, num_threads=CORES))
    _agreement(bench, "A", frame, matrix)
    _treescore_breakdown(bench, frame)
    del matrix
    sample.unpersist()
    frame.unpersist()


def _agreement(bench: Bench, workload: str, frame, matrix: np.ndarray, rows: int = 256) -> None:
    """Largest |difference| between each method's first scores and LightGBM's own predict."""
    from pyspark.sql import functions as F

    expected = bench.ctx.ensemble.predict(matrix[:rows], num_threads=1)
    small = frame.where(F.col("id") < rows)
    found = {}
    for method in SPARK_METHODS:
        try:
            with session.conf(bench.spark, method.conf):
                got = method.build(small, bench.ctx).orderBy("id").toPandas()["prediction"].to_numpy()
            found[method.key] = float(np.max(np.abs(got - expected)))
        except Exception as error:
            found[method.key] = f"failed: {type(error).__name__}"
    bench.agreement[workload] = found


def _treescore_breakdown(bench: Bench, frame) -> None:
    """One more (untimed by the table) run of treescore batched, to read its operator's metrics."""
    import time

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
        rows, note = sizes.rows_a, ""
        if method.sampled:
            rows, note = sizes.udf_rows_a, f"sampled: {sizes.udf_rows_a:,} of {sizes.rows_a:,} rows"
        out = os.path.join(bench.work_dir, "B", method.key)

        def job(method=method, rows=rows, out=out):
            method.build(bench.read(rows), ctx).write.mode("overwrite").parquet(out)

        bench.spark_result("B", method.key, rows, job, conf=method.conf, note=note)
    a_limit = next((r for r in bench.results if r.workload == "A" and r.method == "limit"), None)
    if a_limit is not None:  # the limit has no I/O: B's floor is the same predict as A's
        bench.results.append(Result("B", "limit", a_limit.rows, list(a_limit.seconds), a_limit.peak_bytes,
                                    a_limit.start_bytes, a_limit.status, "same runs as A: predict only, no I/O"))


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
    found = {}
    for key, _, build in grid.GRID_METHODS:
        if build is None:
            continue
        try:
            got = build(small, bench.ctx, levels).orderBy("id", "discount").toPandas()["prediction"].to_numpy()
            found[key] = float(np.max(np.abs(got - expected)))
        except Exception as error:
            found[key] = f"failed: {type(error).__name__}"
    bench.agreement["C"] = found
