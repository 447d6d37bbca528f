"""Progress of a long scoring job on the console: rows scored out of rows, and throughput."""
import sys
import threading
import time
from typing import Optional, TextIO

from pyspark.sql import SparkSession

from treescore._jvm import active_jvm


class ScoreProgress:
    """Prints `treescore: scored N of M rows (P%), R rows/s` every `interval` seconds while open.

    Rows scored are treescore's own "rows scored" metric, counted by a JVM listener as tasks
    finish and, within running tasks, at each executor heartbeat.

    >>> with ScoreProgress(spark, total_rows=frame.count(), interval=10):
    ...     scored.write.parquet(out)
    """

    def __init__(self, spark: SparkSession, total_rows: int, interval: float, stream: Optional[TextIO] = None):
        self._spark = spark
        self._total = total_rows
        self._interval = interval
        self._stream = stream or sys.stderr
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._listener = None
        self._started = 0.0

    def __enter__(self) -> "ScoreProgress":
        listener_class = active_jvm().treescore.progress.ScoreProgressListener
        self._listener = listener_class.attach(self._spark.sparkContext._jsc.sc())
        self._started = time.perf_counter()
        self._thread = threading.Thread(target=self._run, name="treescore-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        if exc[0] is None:
            self._report()  # the final count, after every task has finished
        self._listener.detach()

    @property
    def rows_scored(self) -> int:
        return self._listener.rowsScored()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self._report()

    def _report(self) -> None:
        rows = self.rows_scored
        seconds = max(time.perf_counter() - self._started, 1e-9)
        share = f" ({100 * rows / self._total:.0f}%)" if self._total else ""
        print(f"treescore: scored {rows:,} of {self._total:,} rows{share}, {rows / seconds:,.0f} rows/s",
              file=self._stream, flush=True)
