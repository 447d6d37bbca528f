"""Peak resident memory of a process tree, sampled from /proc in a background thread, and
the CPU time the tree used meanwhile.

For Spark methods the tree is the Spark JVM plus its descendants (PySpark's daemon and
Python workers); for the limit it is this Python process alone. /proc is read directly, so
the suite needs no psutil. RSS of forked workers counts pages they share with the daemon once
per process, as psutil's rss would. CPU time is what the tree itself ran (all threads: for the
JVM also its JIT and GC), so unlike wall time it barely moves when another tenant takes a core.
"""
import os
import threading
from collections import defaultdict
from typing import Dict, List, Tuple

PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
INTERVAL_SECONDS = 0.05


def _processes() -> Dict[int, Tuple[int, int, int]]:
    """Every process: pid -> (parent pid, CPU ticks (user + system), RSS pages), from one pass over /proc."""
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as f:
                stat = f.read()
        except OSError:  # the process ended while we looked
            continue
        # Fields after the command name, which is in parentheses and may hold spaces.
        fields = stat.rsplit(")", 1)[1].split()
        found[int(entry.name)] = (int(fields[1]), int(fields[11]) + int(fields[12]), int(fields[21]))
    return found


def _tree(processes: Dict[int, Tuple[int, int, int]], root: int, with_children: bool) -> List[int]:
    if not with_children:
        return [root] if root in processes else []
    children = defaultdict(list)
    for pid, (parent, _, _) in processes.items():
        children[parent].append(pid)
    tree, stack = [], [root]
    while stack:
        pid = stack.pop()
        if pid in processes:
            tree.append(pid)
            stack.extend(children.get(pid, ()))
    return tree


class PeakRss:
    """`with PeakRss(pid) as peak: ...` then peak.start_bytes, peak.peak_bytes (peak.peak_root_bytes of
    it in the root process itself, the rest in its descendants) and peak.cpu_seconds.

    CPU time is tracked per process (last value seen), so a Python worker that exits during
    the block keeps the CPU it used up to the last sample.
    """

    def __init__(self, root: int, with_children: bool = True, interval: float = INTERVAL_SECONDS):
        self.root, self.with_children, self.interval = root, with_children, interval
        self.start_bytes = self.peak_bytes = self.peak_root_bytes = 0
        self._start_ticks: Dict[int, int] = {}
        self._last_ticks: Dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample_until_stopped, daemon=True)

    def _sample(self) -> int:
        processes = _processes()
        rss = 0
        for pid in _tree(processes, self.root, self.with_children):
            _, ticks, pages = processes[pid]
            rss += pages * PAGE_BYTES
            self._last_ticks[pid] = ticks
        if rss > self.peak_bytes:
            self.peak_bytes = rss
            self.peak_root_bytes = processes[self.root][2] * PAGE_BYTES if self.root in processes else 0
        return rss

    def _sample_until_stopped(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    @property
    def cpu_seconds(self) -> float:
        ticks = sum(t - self._start_ticks.get(pid, 0) for pid, t in self._last_ticks.items())
        return ticks / CLOCK_TICKS

    def __enter__(self) -> "PeakRss":
        self.start_bytes = self._sample()
        self._start_ticks = dict(self._last_ticks)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()


def tree_cpu_seconds(root: int, with_children: bool = True) -> float:
    processes = _processes()
    return sum(processes[pid][1] for pid in _tree(processes, root, with_children)) / CLOCK_TICKS
