"""Peak resident memory of a process tree, sampled from /proc in a background thread.

For Spark methods the tree is the Spark JVM plus its children (PySpark's daemon and Python
workers); for the limit it is this Python process alone. /proc is read directly, so the
suite needs no psutil. RSS of forked workers counts pages they share with the daemon once
per process, as psutil's rss would.
"""
import os
import threading
from collections import defaultdict
from typing import Dict, List

PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
INTERVAL_SECONDS = 0.05


def _children_by_parent() -> Dict[int, List[int]]:
    children = defaultdict(list)
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as f:
                stat = f.read()
        except OSError:  # the process ended while we looked
            continue
        # Fields after the command name, which is in parentheses and may hold spaces.
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children[parent].append(int(entry.name))
    return children


def process_tree(root: int, with_children: bool = True) -> List[int]:
    if not with_children:
        return [root]
    children = _children_by_parent()
    tree, stack = [], [root]
    while stack:
        pid = stack.pop()
        tree.append(pid)
        stack.extend(children.get(pid, ()))
    return tree


def rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE_BYTES
    except (OSError, IndexError, ValueError):
        return 0


def tree_rss_bytes(root: int, with_children: bool = True) -> int:
    return sum(rss_bytes(pid) for pid in process_tree(root, with_children))


class PeakRss:
    """`with PeakRss(pid) as peak: ...` then peak.start_bytes and peak.peak_bytes."""

    def __init__(self, root: int, with_children: bool = True, interval: float = INTERVAL_SECONDS):
        self.root, self.with_children, self.interval = root, with_children, interval
        self.start_bytes = self.peak_bytes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak_bytes = max(self.peak_bytes, tree_rss_bytes(self.root, self.with_children))
            self._stop.wait(self.interval)

    def __enter__(self) -> "PeakRss":
        self.start_bytes = self.peak_bytes = tree_rss_bytes(self.root, self.with_children)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak_bytes = max(self.peak_bytes, tree_rss_bytes(self.root, self.with_children))
