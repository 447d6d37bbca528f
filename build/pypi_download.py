"""Downloads one release file from PyPI with pip, for the build's fetch scripts.

Only pip is used, so a download goes wherever pip is configured to go (an index mirror, a
proxy), and pip's own HTTP cache makes a second fetch of the same release cheap. The pip
is the running interpreter's: pyproject.toml lists pip among the build requirements, because
pip's isolated build environment has none otherwise.
"""
import os
import subprocess
import sys


def cache_root() -> str:
    """Where fetched third-party releases are unpacked: $TREESCORE_CACHE_DIR or ~/.cache/treescore."""
    return os.environ.get("TREESCORE_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "treescore")


def pip_download(spec: str, into: str, *flags: str) -> str:
    """Downloads `spec` (no dependencies) into the empty folder `into`; returns the file's path."""
    os.makedirs(into, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--dest", into, *flags, spec],
        check=True,
    )
    files = os.listdir(into)
    if len(files) != 1:
        raise SystemExit(f"pypi_download: expected one file from pip for {spec}, got {files}")
    return os.path.join(into, files[0])
