"""One measurement: a warm-up run, then timed runs under the memory sampler; the median wins."""
import statistics
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable, List, Optional

from bench.memory import PeakRss


@dataclass
class Result:
    workload: str  # "A", "B", "C", "batch", "scaling"
    method: str  # key from bench.methods.METHODS
    rows: int  # input rows per run
    seconds: List[float] = field(default_factory=list)
    peak_bytes: int = 0
    peak_root_bytes: int = 0  # of peak_bytes, the share of the root process (the JVM; for the limit, all)
    start_bytes: int = 0
    cpu_seconds: float = 0.0  # CPU time of the measured process tree over all timed runs
    status: str = "ok"  # "ok", "pending: ...", "failed: ..."
    note: str = ""
    param: Optional[int] = None  # batch size (sweep), rows (scaling), grid points (C's grid cost; 0: one score)

    @property
    def ok(self) -> bool:
        return self.status == "ok" and bool(self.seconds)

    @property
    def median_seconds(self) -> float:
        return statistics.median(self.seconds)

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.median_seconds

    @property
    def cpu_microseconds_per_row(self) -> float:
        return 1e6 * self.cpu_seconds / (self.rows * len(self.seconds))


def measure(result: Result, action: Callable[[], None], runs: int, pid: int, with_children: bool = True,
            warm_up: Optional[Callable[[], None]] = None, log=print) -> Result:
    """Fills result in place; a failure is recorded in result.status, never raised.

    warm_up, if given, runs first and untimed (the same code, on as many or fewer rows): JIT, Python
    workers, per-worker model caches and the page cache are warm before the clock starts.
    """
    try:
        if warm_up is not None:
            warm_up()
        with PeakRss(pid, with_children) as rss:
            for _ in range(runs):
                started = time.perf_counter()
                action()
                result.seconds.append(time.perf_counter() - started)
        result.peak_bytes, result.peak_root_bytes = rss.peak_bytes, rss.peak_root_bytes
        result.start_bytes, result.cpu_seconds = rss.start_bytes, rss.cpu_seconds
        log(f"  {result.workload:<8}{result.method:<28}{result.param or '':>9} "
            f"{result.rows_per_second:>14,.0f} rows/s  {result.cpu_microseconds_per_row:,.0f} CPU us/row  "
            f"peak {result.peak_bytes / 2**20:,.0f} MiB  "
            f"runs {', '.join(f'{s:.2f}' for s in result.seconds)} s")
    except Exception as error:  # keep measuring the rest; the report says what failed
        first_line = (str(error).strip().splitlines() or [""])[0][:200]
        result.status = f"failed: {type(error).__name__}: {first_line}"
        log(f"  {result.workload:<8}{result.method:<28} FAILED {result.status}")
        log(traceback.format_exc(limit=3))
    return result
