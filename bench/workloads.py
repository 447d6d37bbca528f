"""Workloads A (cached DataFrame, noop write), B (Parquet in, score, Parquet out) and
C (what-if grid), each with the limit, and the JVM warm-up that comes before them."""
import os
import time
from typing import Callable, Dict, List, Optional

import numpy as np

from bench import checks, data, grid, session
from bench.config import CORES, GRID_LEVELS, Sizes
from bench.methods import SPARK_METHODS, Context
from bench.timing import Result, measure


class Bench:
    """Shared state of one benchmark run: the session, the data files, the results so far."""

    def __init__(self, spark, ctx: Context, sizes: Sizes, paths: List[str], work_dir: str, log=print):
        self.spark, self.ctx, self.sizes, self.paths, self.work_dir, self.log = spark, ctx, sizes, paths, work_dir, log
        self.pid = session.jvm_pid(spark)
        self.results: List[Result] = []
        self.agreement: Dict[str, Dict[str, float]] = {}
        self.diagnostics: Dict[str, object] = {}
        self._warm_frame = None

    def read(self, rows: int):
        """The first `rows` rows from Parquet, split into partitions the way spark.read does by default."""
        from pyspark.sql import functions as F

        frame = self.spark.read.parquet(*data.files_for(self.paths, rows, self.sizes.chunk_rows))
        return frame if rows % self.sizes.chunk_rows == 0 else frame.where(F.col("id") < rows)

    def cached(self, rows: int, partitions: Optional[int] = None):
        """The first `rows` rows in equal partitions (by default about partition_rows each, a
        multiple of the core count), cached in memory and materialized before anything is timed."""
        if partitions is None:
            wanted = max(CORES, -(-rows // self.sizes.partition_rows))
            partitions = -(-wanted // CORES) * CORES
        frame = self.read(rows)
        if rows % self.sizes.chunk_rows or frame.rdd.getNumPartitions() != partitions:
            frame = frame.repartition(partitions)
        frame = frame.cache()
        frame.count()
        return frame

    def warm_frame(self):
        """The cached rows warm-up runs score: enough (warm_rows) for the JIT to compile the hot
        per-row code with its optimizing compiler, for Python workers to start and model caches to
        fill, without paying a full-size run at full size."""
        if self._warm_frame is None:
            self._warm_frame = self.cached(max(1, min(self.sizes.warm_rows, self.sizes.rows_a)))
        return self._warm_frame

    def spark_result(self, workload: str, key: str, rows: int, action: Callable[[], None],
                     warm_up: Optional[Callable[[], None]], conf: Optional[dict] = None, note: str = "",
                     param: Optional[int] = None) -> Result:
        session.collect_jvm_garbage(self.spark)
        with session.conf(self.spark, conf or {}):
            result = measure(Result(workload, key, rows, note=note, param=param), action, self.sizes.runs,
                             self.pid, warm_up=warm_up if self.sizes.warm_rows else None, log=self.log)
        self.results.append(result)
        return result

    def limit_result(self, workload: str, rows: int, action: Callable[[], None], warm_up: Callable[[], None],
                     note: str = "", method: str = "limit") -> Result:
        """The limit runs in this process: its memory is this process's RSS alone."""
        result = measure(Result(workload, method, rows, note=note), action, self.sizes.runs, os.getpid(),
                         with_children=False, warm_up=warm_up if self.sizes.warm_rows else None, log=self.log)
        self.results.append(result)
        return result

    def matrix(self, rows: int) -> np.ndarray:
        return data.load_matrix(data.files_for(self.paths, rows, self.sizes.chunk_rows), self.sizes.features, rows)


def warm_jvm(bench: Bench) -> None:
    """Scores the warm-up rows with treescore (batched and rule off), round after round, for
    jvm_warm_seconds.

    A fresh JVM keeps compiling (C2) for tens of seconds of work; whatever is measured first,
    treescore, would pay for it, in wall time and in CPU time. Only JVM methods run here, so no
    Python worker exists yet when treescore's memory is measured. Per-method warm-ups come on top.
    """
    if not bench.sizes.jvm_warm_seconds:
        return
    warm = bench.warm_frame()
    started, rounds = time.perf_counter(), 0
    jvm_heavy = [m for m in SPARK_METHODS if m.key in ("treescore_batched", "treescore_fallback")]
    while rounds == 0 or time.perf_counter() - started < bench.sizes.jvm_warm_seconds:
        for method in jvm_heavy:
            with session.conf(bench.spark, method.conf):
                session.noop_write(method.build(warm, bench.ctx))
        rounds += 1
    bench.diagnostics["jvm_warm_up"] = {"seconds": time.perf_counter() - started, "rounds": rounds,
                                        "rows": warm.count()}
    bench.log(f"JVM warm-up: {rounds} rounds of {len(jvm_heavy)} methods in {time.perf_counter() - started:.0f} s")


def workload_a(bench: Bench) -> None:
    sizes, ctx = bench.sizes, bench.ctx
    frame = bench.cached(sizes.rows_a)
    sample = bench.cached(sizes.udf_rows_a)
    warm = bench.warm_frame() if sizes.warm_rows else None
    for method in SPARK_METHODS:
        source, rows, note, warm_source = frame, sizes.rows_a, "", warm
        if method.sampled:
            source, rows, warm_source = sample, sizes.udf_rows_a, sample
            note = f"sampled: {rows:,} of {sizes.rows_a:,} rows"
        bench.spark_result("A", method.key, rows, lambda: session.noop_write(method.build(source, ctx)),
                           warm_up=lambda: session.noop_write(method.build(warm_source, ctx)), conf=method.conf,
                           note=note)

    matrix = bench.matrix(sizes.rows_a)
    small = matrix[: max(1, sizes.warm_rows)]
    limit = bench.limit_result("A", sizes.rows_a, lambda: ctx.ensemble.predict(matrix, num_threads=CORES),
                               warm_up=lambda: ctx.ensemble.predict(small, num_threads=CORES))
    started = time.perf_counter()  # one single-thread predict: how much do LightGBM's 2 threads give here?
    ctx.ensemble.predict(matrix, num_threads=1)
    bench.diagnostics["limit_one_thread_rows_per_second"] = sizes.rows_a / (time.perf_counter() - started)
    bench.limit_result("A", sizes.rows_a, lambda: ctx.ensemble.predict(matrix, CORES, engine="treescore"),
                       warm_up=lambda: ctx.ensemble.predict(small, CORES, engine="treescore"), method="limit_engine")
    if limit.ok:
        bench.diagnostics["limit_rows_per_second"] = limit.rows_per_second
    checks.agreement(bench, "A", frame, matrix)
    checks.treescore_breakdown(bench, "A", frame, sizes.rows_a)
    matrix = small = None  # frees the matrix (the lambdas above hold these cells, not the arrays)
    sample.unpersist()
    frame.unpersist()


def workload_b(bench: Bench) -> None:
    sizes, ctx = bench.sizes, bench.ctx
    for method in SPARK_METHODS:
        rows, note = sizes.rows_b, ""
        if method.sampled:
            rows = sizes.udf_rows_a
            note = f"sampled: {rows:,} of {sizes.rows_b:,} rows, repartitioned over {CORES} cores"
        out = os.path.join(bench.work_dir, "B", method.key)

        def job(rows, method=method, out=out):
            frame = bench.read(rows)
            if method.sampled:  # the sample sits in few files: spread it over the cores
                frame = frame.repartition(CORES)
            method.build(frame, ctx).write.mode("overwrite").parquet(out)

        warm_rows = rows if method.sampled else min(rows, sizes.warm_rows)
        bench.spark_result("B", method.key, rows, lambda: job(rows), warm_up=lambda: job(warm_rows),
                           conf=method.conf, note=note)
    checks.treescore_breakdown(bench, "B", bench.read(sizes.rows_b), sizes.rows_b)
    # The limit has no I/O: B's floor is LightGBM's predict of B's rows, in memory.
    matrix = bench.matrix(sizes.rows_b)
    small = matrix[: max(1, sizes.warm_rows)]
    bench.limit_result("B", sizes.rows_b, lambda: ctx.ensemble.predict(matrix, num_threads=CORES),
                       warm_up=lambda: ctx.ensemble.predict(small, num_threads=CORES), note="predict only, no I/O")
    bench.limit_result("B", sizes.rows_b, lambda: ctx.ensemble.predict(matrix, CORES, engine="treescore"),
                       warm_up=lambda: ctx.ensemble.predict(small, CORES, engine="treescore"),
                       note="predict only, no I/O", method="limit_engine")


def workload_c(bench: Bench) -> None:
    sizes, ctx = bench.sizes, bench.ctx
    levels = data.discount_grid(GRID_LEVELS)
    frame = bench.cached(sizes.rows_c)
    sample = bench.cached(sizes.udf_rows_c)
    # Warm-ups score about warm_rows scores: rows_c rows at most, each row GRID_LEVELS times.
    warm_rows = min(sizes.rows_c, max(sizes.udf_rows_c, sizes.warm_rows // GRID_LEVELS))
    warm = bench.cached(warm_rows) if sizes.warm_rows else None
    for key, how, build, conf in grid.GRID_METHODS:
        if build is None:
            bench.results.append(Result("C", key, sizes.rows_c, status=grid.PENDING))
            continue
        source, rows, note, warm_source = frame, sizes.rows_c, how, warm
        if key == "python_udf":
            source, rows, warm_source = sample, sizes.udf_rows_c, sample
            note = f"{how}; sampled: {rows:,} of {sizes.rows_c:,} rows"
        bench.spark_result("C", key, rows, lambda: session.noop_write(build(source, ctx, levels)),
                           warm_up=lambda: session.noop_write(build(warm_source, ctx, levels)), conf=conf, note=note)

    grid_cost(bench, frame, warm)

    matrix = bench.matrix(sizes.rows_c)
    small = matrix[:warm_rows].copy()
    bench.limit_result("C", sizes.rows_c, lambda: grid.limit(ctx.ensemble, matrix, levels, CORES),
                       warm_up=lambda: grid.limit(ctx.ensemble, small, levels, CORES),
                       note="loop over levels, predict with 2 threads")
    bench.limit_result("C", sizes.rows_c, lambda: grid.limit(ctx.ensemble, matrix, levels, CORES, "treescore"),
                       warm_up=lambda: grid.limit(ctx.ensemble, small, levels, CORES, "treescore"),
                       note="loop over levels, 2 engine threads", method="limit_engine")
    checks.grid_agreement(bench, frame, matrix, levels)
    for cached in (warm, sample, frame):
        if cached is not None:
            cached.unpersist()


def grid_cost(bench: Bench, frame, warm) -> None:
    """What a K-point grid costs next to one score of the same rows: the ensemble once per row
    (param 0), then score_grid at K = 1, 5, 15 and 29 levels (param K), and at 15 levels with a
    derived input, each array noop-written.
    Workload C's results with a param; the main table shows only those without."""
    ctx = bench.ctx
    bench.spark_result("C", "treescore_batched", bench.sizes.rows_c,
                       lambda: session.noop_write(grid.treescore_one_score(frame, ctx)),
                       warm_up=lambda: session.noop_write(grid.treescore_one_score(warm, ctx)) if warm else None,
                       note="one score per row", param=0)
    cases = [(points, None) for points in grid.COST_POINTS] + [(GRID_LEVELS, grid.DERIVED)]
    for points, derived in cases:
        levels = data.discount_grid(points)
        note = f"{points}-point grid" + "".join(f", derived {k} = {v}" for k, v in (derived or {}).items())
        bench.spark_result("C", "treescore_batched", bench.sizes.rows_c,
                           lambda: session.noop_write(grid.treescore_curves(frame, ctx, levels, derived)),
                           warm_up=lambda: session.noop_write(grid.treescore_curves(warm, ctx, levels, derived))
                           if warm else None, note=note, param=points)
