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
    start_bytes: int = 0
    status: str = "ok"  # "ok", "pending: ...", "failed: ..."
    note: str = ""
    param: Optional[int] = None  # batch size (sweep) or rows (scaling)

    @property
    def ok(self) -> bool:
        return self.status == "ok" and bool(self.seconds)

    @property
    def median_seconds(self) -> float:
        return statistics.median(self.seconds)

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.median_seconds


def measure(result: Result, action: Callable[[], None], runs: int, pid: int, with_children: bool = True,
            warm_up: bool = True, log=print) -> Result:
    """Fills result in place; a failure is recorded in result.status, never raised."""
    try:
        if warm_up:
            action()  # JIT, Python workers, per-worker model caches, page cache
        with PeakRss(pid, with_children) as rss:
            for _ in range(runs):
                started = time.perf_counter()
                action()
                result.seconds.append(time.perf_counter() - started)
        result.peak_bytes, result.start_bytes = rss.peak_bytes, rss.start_bytes
        log(f"  {result.workload:<8}{result.method:<28}{result.param or '':>9} "
            f"{result.rows_per_second:>14,.0f} rows/s  peak {result.peak_bytes / 2**20:,.0f} MiB  "
            f"runs {', '.join(f'{s:.2f}' for s in result.seconds)} s")
    except Exception as error:  # keep measuring the rest; the report says what failed
        first_line = (str(error).strip().splitlines() or [""])[0][:200]
        result.status = f"failed: {type(error).__name__}: {first_line}"
        log(f"  {result.workload:<8}{result.method:<28} FAILED {result.status}")
        log(traceback.format_exc(limit=3))
    return result
