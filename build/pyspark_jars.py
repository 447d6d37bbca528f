"""Unpacks the Spark jars that a pyspark release on PyPI ships, to compile and test against.

Maven Central does not serve every Spark release's jars here (spark-mllib 4.1.3 and all of
4.3.0 are refused), but every pyspark release carries its Spark's jars: the wheel under
pyspark/jars/, the sdist (the only form of 3.5.x and some 4.x releases) under deps/jars/.
So each Spark line treescore supports is built against exactly the jars its users run.

Usage: pyspark_jars.py VERSION
Prints the folder holding the jars: <cache>/pyspark-VERSION/jars (see pypi_download.cache_root).
A finished folder is reused; a half-unpacked one is never mistaken for a finished one.
"""
import os
import shutil
import sys
import tarfile
import tempfile
import zipfile

from pypi_download import cache_root, pip_download

JAR_FOLDERS = ("/deps/jars/", "pyspark/jars/")


def jar_members(names):
    """The archive's Spark jars, mapped to their file names."""
    return {n: os.path.basename(n) for n in names if n.endswith(".jar") and any(f in n for f in JAR_FOLDERS)}


def unpack(archive_path: str, dest: str) -> None:
    os.makedirs(dest)
    if archive_path.endswith(".whl"):
        with zipfile.ZipFile(archive_path) as archive:
            for name, base in jar_members(archive.namelist()).items():
                with archive.open(name) as src, open(os.path.join(dest, base), "wb") as out:
                    shutil.copyfileobj(src, out)
    else:
        with tarfile.open(archive_path) as archive:
            members = {m.name: m for m in archive.getmembers() if m.isfile()}
            for name, base in jar_members(members).items():
                with archive.extractfile(members[name]) as src, open(os.path.join(dest, base), "wb") as out:
                    shutil.copyfileobj(src, out)
    if not any(n.startswith("spark-sql_") for n in os.listdir(dest)):
        raise SystemExit(f"pyspark_jars: {os.path.basename(archive_path)} holds no spark-sql jar")


def main(version: str) -> str:
    home = os.path.join(cache_root(), f"pyspark-{version}")
    jars = os.path.join(home, "jars")
    if os.path.isfile(os.path.join(home, ".complete")):
        return jars
    os.makedirs(cache_root(), exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_root()) as work:
        archive = pip_download(f"pyspark=={version}", os.path.join(work, "download"))
        staged = os.path.join(work, "staged")
        unpack(archive, os.path.join(staged, "jars"))
        open(os.path.join(staged, ".complete"), "w").close()
        shutil.rmtree(home, ignore_errors=True)
        os.replace(staged, home)
    return jars


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    print(main(sys.argv[1]))
