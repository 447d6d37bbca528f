"""Checks made alongside the timings: every method's scores against LightGBM's own predict,
and where treescore's time goes (its BatchScore operator's metrics and its tasks' times)."""
import time
from typing import Dict, List, Optional

import numpy as np

from bench import grid, session
from bench.config import CORES
from bench.methods import BATCH_OFF, SPARK_METHODS, treescore_scored


def _compare(bench, workload: str, frames: Dict[str, object], order: List[str], expected: np.ndarray,
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


def agreement(bench, workload: str, frame, matrix: np.ndarray, rows: int = 256) -> None:
    """Largest |difference| between each method's first scores and LightGBM's own predict."""
    from pyspark.sql import functions as F

    expected = bench.ctx.ensemble.predict(matrix[:rows], num_threads=1)
    small = frame.where(F.col("id") < rows)
    for conf in ({}, BATCH_OFF):  # the rule-off method needs its setting for the whole query
        frames = {m.key: m.build(small, bench.ctx) for m in SPARK_METHODS if m.conf == conf}
        if frames:
            _compare(bench, workload, frames, ["id"], expected, conf)


COLUMNAR_OFF = {"spark.treescore.columnar.enabled": "false"}


def treescore_breakdown(bench, workload: str, frame, rows: int) -> None:
    """Extra runs of treescore batched over `frame` (not in the table), to read its operator's
    metrics and its tasks' times: once reading column vectors (the default), once with the
    columnar input off, reading rows, as every run did before it."""
    paths = {}
    for path, conf in (("columns", {}), ("rows", COLUMNAR_OFF)):
        with session.conf(bench.spark, conf):
            scored = treescore_scored(frame, bench.ctx)
            before = session.stage_totals(bench.spark)
            started = time.perf_counter()
            metrics, input_path = session.batch_score_metrics(scored)
            wall = time.perf_counter() - started
            time.sleep(1.0)  # the status store hears of finished tasks asynchronously
            after = session.stage_totals(bench.spark)
        new = [after[s] for s in after if s not in before]
        paths[path] = {"metrics": metrics, "input_path": input_path, "wall_seconds": wall,
                       "task_run_seconds": sum(run for run, _ in new) / 1e3,
                       "task_cpu_seconds": sum(cpu for _, cpu in new) / 1e9}
    bench.diagnostics[f"breakdown_{workload}"] = {"paths": paths, "cores": CORES, "rows": rows,
                                                   "calls": len(bench.ctx.treescore_models)}
    if workload == "A":
        with session.conf(bench.spark, BATCH_OFF):
            fallback_planned = session.plan_has_batch_score(treescore_scored(frame, bench.ctx))
        bench.diagnostics["plans"] = {"batched_has_BatchScore": paths["columns"]["metrics"] is not None,
                                      "fallback_has_BatchScore": fallback_planned}


def grid_agreement(bench, frame, matrix: np.ndarray, levels, rows: int = 16) -> None:
    """The same for workload C: each method's (row, level) scores against the limit's loop."""
    from pyspark.sql import functions as F

    expected = grid.limit(bench.ctx.ensemble, matrix[:rows].copy(), levels, 1)
    small = frame.where(F.col("id") < rows)
    for conf in ({}, BATCH_OFF):  # the rule-off method needs its setting for the whole query
        frames = {key: build(small, bench.ctx, levels)
                  for key, _, build, settings in grid.GRID_METHODS if build is not None and settings == conf}
        if frames:
            _compare(bench, "C", frames, ["id", "discount"], expected, conf)
