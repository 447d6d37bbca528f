"""`treescore score`: Parquet in, scores appended, Parquet out."""
import time

from treescore.errors import jvm_errors
from treescore.functions import score
from treescore.model import Model
from treescore.progress import ScoreProgress
from treescore.spark_session import command_session


def run_score_job(args) -> int:
    spark = command_session("treescore score", args.master)
    try:
        model = Model.load(args.model)
        with jvm_errors():
            frame = spark.read.parquet(args.input)
        columns = args.columns or []
        scored = frame.withColumn(args.output_column, score(model, *columns))
        started = time.perf_counter()
        if args.progress_interval > 0:
            # Parquet keeps row counts in its footers, so this count reads no column data.
            with ScoreProgress(spark, total_rows=frame.count(), interval=args.progress_interval):
                scored.write.mode(args.mode).parquet(args.output)
        else:
            scored.write.mode(args.mode).parquet(args.output)
        seconds = time.perf_counter() - started
        rows = spark.read.parquet(args.output).count()
        print(f"scored {rows:,} rows with model {model.content_hash[:12]} into {args.output} "
              f"in {seconds:.1f} s ({rows / seconds:,.0f} rows/s)")
        return 0
    finally:
        spark.stop()
