"""The sweeps: rows per batch (the talk's "Goldilocks" figure) and rows per job (scaling)."""
from bench import session
from bench.config import CORES
from bench.methods import map_in_pandas, treescore_scored
from bench.workloads import Bench

# (method key, builder, the setting that is its batch size)
BATCHED = [
    ("map_in_pandas", map_in_pandas, "spark.sql.execution.arrow.maxRecordsPerBatch"),
    ("treescore_batched", treescore_scored, "spark.treescore.batch.rows"),
]


def batch_size(bench: Bench) -> None:
    """Workload A's kind of data in one partition per core, so a batch can grow to sweep_rows / CORES rows.

    One warm-up per method (at the first size); every size then gets its timed runs.
    """
    sizes = bench.sizes
    frame = bench.cached(sizes.sweep_rows, partitions=CORES)
    per_partition = sizes.sweep_rows // CORES
    for key, build, setting in BATCHED:
        for i, size in enumerate(sizes.batch_sizes):
            note = f"capped: a partition holds {per_partition:,} rows" if size > per_partition else ""
            warm = bench.warm_frame() if sizes.warm_rows else None
            bench.spark_result("batch", key, sizes.sweep_rows, lambda: session.noop_write(build(frame, bench.ctx)),
                               warm_up=(lambda: session.noop_write(build(warm, bench.ctx))) if i == 0 else None,
                               conf={setting: size}, note=note, param=size)
    frame.unpersist()


def scaling(bench: Bench) -> None:
    """Rows read from Parquet (partitioned as spark.read does), scored, noop-written; per-row cost should stay flat."""
    smallest = bench.sizes.scaling_rows[0]
    for key, build, _ in BATCHED:
        for i, rows in enumerate(bench.sizes.scaling_rows):
            bench.spark_result("scaling", key, rows, lambda: session.noop_write(build(bench.read(rows), bench.ctx)),
                               warm_up=(lambda: session.noop_write(build(bench.read(smallest), bench.ctx)))
                               if i == 0 else None, param=rows)
