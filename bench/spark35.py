"""A Python with Spark 3.5 for the sections that need that line (SynapseML 1.1.3 exists only
for Scala 2.12 / Spark 3.5), made once and cached in bench/.cache/venv-spark-3.5 (gitignored).

It holds the treescore wheel with its demo extras (lightgbm, pandas, pyarrow: what
Booster.predict and mapInPandas need; the bench extras' engines run in the parent only), the pyspark release build/spark-lines.txt pins for the
3.5 line, and the synapseml Python package. Everything it needs is installed here, from PyPI,
so a fresh machine has nothing to prepare. A stamp file in the venv records what it was made
from (the wheel's SHA-256 among them); a different wheel, or any other change to the list,
makes it again from scratch.

    python -m bench.spark35 [WHEEL]   # make (or check) the venv and print its python
"""
import fcntl
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
from typing import Callable, Optional, Tuple

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".cache")
VENV_DIR = os.path.join(CACHE_DIR, "venv-spark-3.5")
SPARK_LINES = os.path.join(REPO_ROOT, "build", "spark-lines.txt")
LINE = "3.5"
SYNAPSEML_VERSION = "1.1.3"  # the SynapseML release whose Maven jars the section loads; Python package alike
EXTRAS = "demo"
STAMP = "treescore-bench-venv.json"
WHEEL_ENV = "TREESCORE_BENCH_WHEEL"  # a wheel to use instead of dev/release's


class VenvError(RuntimeError):
    """The venv could not be made; the message says which step failed."""


def pinned_pyspark(line: str = LINE, path: str = SPARK_LINES) -> str:
    """The pyspark release build/spark-lines.txt pins for a Spark line (its second column)."""
    with open(path) as f:
        for raw in f:
            fields = raw.split("#", 1)[0].split()
            if fields and fields[0] == line:
                return fields[1]
    raise VenvError(f"{path} has no row for Spark {line}")


def find_wheel(wheel: Optional[str] = None) -> str:
    """The wheel to install: the one given, else $TREESCORE_BENCH_WHEEL, else the newest
    target/release/python/treescore-*.whl (dev/release) in the repository."""
    wheel = wheel or os.environ.get(WHEEL_ENV)
    if wheel:
        if not os.path.isfile(wheel):
            raise VenvError(f"no treescore wheel at {wheel}")
        return os.path.abspath(wheel)
    found = glob.glob(os.path.join(REPO_ROOT, "target", "release", "python", "treescore-*.whl"))
    if not found:
        raise VenvError(f"no target/release/python/treescore-*.whl in {REPO_ROOT} (run dev/release, or set {WHEEL_ENV})")
    return max(found, key=os.path.getmtime)


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def python_path(venv: str = VENV_DIR) -> str:
    return os.path.join(venv, "bin", "python")


def wanted(wheel: str) -> dict:
    """What the venv must be made from; any difference from the stamp makes it anew."""
    return {"python": ".".join(map(str, sys.version_info[:3])), "wheel": os.path.basename(wheel),
            "wheel_sha256": _sha256(wheel), "extras": EXTRAS, "pyspark": pinned_pyspark(),
            "synapseml": SYNAPSEML_VERSION}


def _stamp(venv: str) -> Optional[dict]:
    try:
        with open(os.path.join(venv, STAMP)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _run(step: str, command, log: Callable[[str], None], timeout: float) -> None:
    log(f"spark 3.5 venv: {step}")
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise VenvError(f"{step}: no answer in {timeout:.0f} s") from None
    if done.returncode != 0:
        tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-3:]
        raise VenvError(f"{step} failed (exit {done.returncode}): {' | '.join(tail)}")


def ensure(wheel: Optional[str] = None, venv: str = VENV_DIR, log: Callable[[str], None] = print,
           timeout: float = 1800) -> Tuple[str, dict]:
    """Makes the venv if it is missing or was made from something else; returns (its python, its stamp).

    A lock file next to the venv keeps two runs from building it at once. The stamp is written
    last, so a build that was killed half way is found incomplete and made again.
    """
    wheel = find_wheel(wheel)
    want = wanted(wheel)
    os.makedirs(os.path.dirname(venv), exist_ok=True)
    with open(venv + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        have = _stamp(venv)
        if have == want and os.path.isfile(python_path(venv)):
            return python_path(venv), have
        log(f"spark 3.5 venv: making {venv} ({'first time' if have is None else 'the wheel or pins changed'}); "
            "downloads pyspark and synapseml from PyPI, can take minutes")
        shutil.rmtree(venv, ignore_errors=True)
        # The base interpreter, not this venv's python: a venv made from a venv points at the base anyway.
        base = getattr(sys, "_base_executable", sys.executable)
        _run("python -m venv", [base, "-m", "venv", venv], log, 300)
        python = python_path(venv)
        _run("upgrade pip", [python, "-m", "pip", "install", "--quiet", "--upgrade", "pip"], log, 600)
        _run(f"install treescore [{EXTRAS}], pyspark=={want['pyspark']}, synapseml=={SYNAPSEML_VERSION}",
             [python, "-m", "pip", "install", "--quiet", f"{wheel}[{EXTRAS}]", f"pyspark=={want['pyspark']}",
              f"synapseml=={SYNAPSEML_VERSION}"], log, timeout)
        _run("import check", [python, "-c", "import pyspark, synapse.ml, treescore, lightgbm, pandas, pyarrow; "
                                            f"assert pyspark.__version__ == {want['pyspark']!r}, pyspark.__version__"],
             log, 300)
        with open(os.path.join(venv, STAMP + ".tmp"), "w") as f:
            json.dump(want, f, indent=1)
        os.replace(os.path.join(venv, STAMP + ".tmp"), os.path.join(venv, STAMP))
        return python, want


if __name__ == "__main__":
    print(ensure(sys.argv[1] if len(sys.argv) > 1 else None)[0])
