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
    rows_a: int  # workload A rows (cached)
    rows_b: int  # workload B rows (Parquet in, Parquet out)
    rows_c: int  # workload C input rows (each becomes GRID_LEVELS scores)
    udf_rows_a: int  # the row-at-a-time Python UDF scores only this sample in A and B ...
    udf_rows_c: int  # ... and this many input rows in C
    sweep_rows: int  # batch size sweep rows, in one partition per core
    batch_sizes: Tuple[int, ...]  # rows per batch (Arrow batch / treescore batch)
    scaling_rows: Tuple[int, ...]
    chunk_rows: int  # rows per generated Parquet file (B and scaling read files as spark.read splits them)
    partition_rows: int  # rows per partition of the cached DataFrames (A, C), about
    runs: int  # timed runs per measurement (the median is reported), after one warm-up run
    driver_memory: str
    rows_shapes: int = 0  # workload A's rows for the other model shapes (bench/shapes.py)
    cascade_sample_rows: int = 0  # rows Cascade.fit learns from (bench/cascade.py; it scores A's rows)
    topk_rows: int = 0  # the top-K section's rows (bench/topk.py) ...
    topk_k: int = 1  # ... and how many of the best it keeps
    shap_rows: int = 0  # rows the SHAP section explains in memory (bench/shap.py)
    warm_rows: int = 0  # rows of the untimed warm-up run before each method's timed runs (0: none)
    jvm_warm_seconds: float = 0  # before anything is measured, score for this long so the JIT settles
    java_options: str = ""  # extra driver JVM options

    def rows_needed(self, sections) -> int:
        """Rows of data the given sections read (the JVM warm-up always reads warm_rows of A's):
        a run of some sections does not pay for generating the 4M rows only scaling needs."""
        per_section = {"A": self.rows_a, "B": self.rows_b, "C": self.rows_c, "batch": self.sweep_rows,
                       "scaling": max(self.scaling_rows), "engines": 0, "shapes": self.rows_shapes,
                       "synapseml": max(self.rows_a, self.rows_b),  # A35 and B35 (bench/synapse.py)
                       "cascade": self.rows_a, "topk": self.topk_rows, "shap": 0}
        return max([max(1, min(self.warm_rows, self.rows_a))] + [per_section[s] for s in sections])


# Sized so that the whole suite takes at most 90 minutes on the 2-core machine of the published
# run (bench/README.md has the minutes per section): the Python methods, at 15 to 30 thousand rows
# per second, set the pace; treescore's rows are the same rows.
FULL = Sizes("full", features=200, trees=300, leaves=31, train_rows=50_000,
             rows_a=500_000, rows_b=500_000, rows_c=50_000, udf_rows_a=10_000, udf_rows_c=1_000,
             sweep_rows=500_000, batch_sizes=(1_024, 4_096, 16_384, 65_536, 262_144),
             scaling_rows=(125_000, 500_000, 1_000_000), chunk_rows=62_500, partition_rows=62_500,
             runs=3, driver_memory="12g", warm_rows=50_000, jvm_warm_seconds=60, rows_shapes=200_000,
             cascade_sample_rows=100_000, topk_rows=2_000_000, topk_k=1_000, shap_rows=4_000)

# Same model as the full run, and rows enough that every method runs for seconds per timed
# run, far above Spark's fixed costs, so that its ratios match the full run's (workload A: 200,000
# rows, as many partitions as the full run's); the slow Python methods still take most of the time.
QUICK = Sizes("quick", features=200, trees=300, leaves=31, train_rows=50_000,
              rows_a=200_000, rows_b=200_000, rows_c=20_000, udf_rows_a=2_000, udf_rows_c=200,
              sweep_rows=200_000, batch_sizes=(1_024, 8_192, 65_536),
              scaling_rows=(50_000, 100_000, 200_000), chunk_rows=25_000, partition_rows=25_000,
              runs=3, driver_memory="8g", warm_rows=20_000, jvm_warm_seconds=30, rows_shapes=50_000,
              cascade_sample_rows=20_000, topk_rows=400_000, topk_k=200, shap_rows=2_000)

# Tiny everything, no warm-up and a single timed run: checks that the suite runs end to end
# (tests/test_bench_smoke.py); its numbers mean nothing.
SMOKE = Sizes("smoke", features=20, trees=10, leaves=31, train_rows=5_000,
              rows_a=1_000, rows_b=1_000, rows_c=100, udf_rows_a=100, udf_rows_c=20,
              sweep_rows=1_000, batch_sizes=(256, 1_024), scaling_rows=(500, 1_000),
              chunk_rows=250, partition_rows=500, runs=1, driver_memory="1g", warm_rows=0,
              java_options="-XX:TieredStopAtLevel=1", rows_shapes=500,  # C1 only: a short run gains nothing from C2
              cascade_sample_rows=2_000, topk_rows=1_000, topk_k=5, shap_rows=50)

MODES = {"full": FULL, "quick": QUICK, "smoke": SMOKE}
