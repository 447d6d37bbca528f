"""Benchmark sizes for each mode. The model never shrinks in --quick: only the row counts do."""
from dataclasses import dataclass
from typing import Tuple

CORES = 2  # every Spark method runs on local[2]; the limit predicts with 2 threads
WEIGHTS = (0.5, 0.3, 0.2)  # the ensemble's weighted mean
GRID_LEVELS = 15  # workload C: what-if discount levels per row


@dataclass(frozen=True)
class Sizes:
    mode: str
    features: int
    trees: int
    leaves: int
    train_rows: int
    rows_a: int  # workload A (cached) and B (Parquet) rows
    rows_c: int  # workload C input rows (each becomes GRID_LEVELS scores)
    udf_rows_a: int  # the row-at-a-time Python UDF scores only this sample in A and B ...
    udf_rows_c: int  # ... and this many input rows in C
    batch_sizes: Tuple[int, ...]  # sweep of rows per batch (Arrow batch / treescore batch)
    scaling_rows: Tuple[int, ...]
    chunk_rows: int  # rows per generated Parquet file; every row count above is a multiple
    runs: int  # timed runs per measurement (the median is reported), after one warm-up run
    driver_memory: str

    @property
    def total_rows(self) -> int:
        return max(self.rows_a, self.rows_c, *self.scaling_rows)


FULL = Sizes("full", features=200, trees=300, leaves=31, train_rows=50_000,
             rows_a=2_000_000, rows_c=200_000, udf_rows_a=20_000, udf_rows_c=2_000,
             batch_sizes=(1_024, 4_096, 16_384, 65_536, 262_144, 1_048_576),
             scaling_rows=(250_000, 1_000_000, 4_000_000), chunk_rows=50_000, runs=3, driver_memory="12g")

QUICK = Sizes("quick", features=200, trees=300, leaves=31, train_rows=50_000,
              rows_a=40_000, rows_c=2_000, udf_rows_a=2_000, udf_rows_c=200,
              batch_sizes=(1_024, 8_192, 65_536),
              scaling_rows=(10_000, 40_000, 80_000), chunk_rows=2_000, runs=3, driver_memory="4g")

# Tiny everything, to check that the suite runs end to end (tests/test_bench_smoke.py).
SMOKE = Sizes("smoke", features=20, trees=10, leaves=31, train_rows=5_000,
              rows_a=2_000, rows_c=200, udf_rows_a=200, udf_rows_c=40,
              batch_sizes=(256, 4_096), scaling_rows=(1_000, 2_000), chunk_rows=200, runs=3,
              driver_memory="1g")

MODES = {"full": FULL, "quick": QUICK, "smoke": SMOKE}
