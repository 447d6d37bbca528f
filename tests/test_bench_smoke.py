"""The benchmark suite (bench/) runs end to end at tiny sizes and reports every method.

Its numbers are not checked: the suite measures, it does not pass or fail. This only guards
the plumbing, with whatever this Python has (matplotlib and psutil may be missing).
"""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The names latest.md gives the eight methods (bench/methods.py METHODS).
METHOD_NAMES = [
    "Python UDF (row at a time)",
    "pandas UDF (Series to Series)",
    "pandas UDF (Iterator of Series)",
    "mapInPandas",
    "mapInArrow",
    "treescore, rule off (row at a time)",
    "treescore batched",
    "limit: LightGBM predict in memory",
]


def test_bench_smoke_runs_and_lists_every_method(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--smoke", "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    report = (tmp_path / "latest.md").read_text()
    missing = [name for name in METHOD_NAMES if f"| {name} |" not in report]
    assert not missing, f"latest.md does not list {missing}"
