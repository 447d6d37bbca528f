"""The jars on Linuxes other than the build machine's: a plain Java Spark job (tests/helpers/ScoreJob.java)
scores with treescore's SQL function inside Debian 11 roots (glibc 2.31, older than the build
machine's), with the root's own OpenJDK 17 and the newest Spark line's jars: on x86_64, and on
aarch64 under qemu-user. Each engine's scores must have the bits of Booster.predict on this machine.

The roots come from build/debian_root.sh (debootstrap from Debian's bullseye suite), which needs
root, as the chroot does."""
import os
import subprocess
from contextlib import ExitStack, contextmanager

import numpy as np
import pandas as pd
import pyspark
import pytest

import lightgbm as lgb
from conftest import ROOT, thresholds

DEBIAN_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}
# The JDK's packages Spark reaches into on Java 17 (spark-submit adds these itself).
OPENS = ["java.base/java.lang", "java.base/java.lang.invoke", "java.base/java.nio", "java.base/java.util",
         "java.base/sun.nio.ch"]
LINE_JAR = os.path.join(ROOT, "jvm", "target", "jars", f"treescore-spark-{pyspark.__version__.rsplit('.', 1)[0]}.jar")
SPARK_JARS = os.path.join(os.path.dirname(pyspark.__file__), "jars")


@pytest.fixture(scope="module", params=["x86_64", "aarch64"])
def root(request):
    """A Debian 11 root for the parameter's architecture, made once under target/roots/ (dev/test's
    aarch64 ctest runs in the same one)."""
    if os.geteuid() != 0:
        pytest.fail("these tests make Debian roots with debootstrap and chroot into them: run them as root")
    arch = request.param
    path = os.path.join(ROOT, "target", "roots", f"debian-bullseye-{arch}")
    subprocess.run([os.path.join(ROOT, "build", "debian_root.sh"), arch, path], check=True, timeout=1800)
    return arch, path


@contextmanager
def mounted(root: str, read_only: dict, writable: dict):
    """/proc and host folders (host path -> path in the root) mounted in `root` for as long as the
    block runs, and unmounted again on every path. The host's own folders are read-only inside:
    were a run killed before unmounting, deleting the root could not reach into them."""
    with ExitStack() as mounts:
        for source, inside in [("proc", "/proc"), *read_only.items(), *writable.items()]:
            target = os.path.join(root, inside.lstrip("/"))
            os.makedirs(target, exist_ok=True)
            subprocess.run(["mount", "-t", "proc", source, target] if source == "proc" else
                           ["mount", "--bind", source, target], check=True)
            mounts.callback(subprocess.run, ["umount", target], check=True)
            if source in read_only:
                subprocess.run(["mount", "-o", "remount,bind,ro", target], check=True)
        yield


@pytest.fixture(scope="module")
def job_classes(tmp_path_factory):
    """tests/helpers/ScoreJob.java, compiled for Java 17 against this line's Spark."""
    out = tmp_path_factory.mktemp("job-classes")
    subprocess.run(["javac", "--release", "17", "-cp", os.path.join(SPARK_JARS, "*"), "-d", str(out),
                    os.path.join(ROOT, "tests", "helpers", "ScoreJob.java")], check=True)
    return str(out)


def model_and_rows(work):
    """A binary model with a categorical feature of hundreds of codes, and rows holding NaN, +-0,
    +-inf, unseen and negative codes, and values one ulp either side of every threshold."""
    rng = np.random.default_rng(5)
    names = [f"x{i}" for i in range(6)]
    x = rng.normal(size=(8000, 6))
    x[rng.random(x.shape) < 0.05] = np.nan
    x[:, 5] = rng.integers(0, 400, size=len(x))
    y = np.nan_to_num(x[:, 0]) - np.nan_to_num(x[:, 1]) ** 2 + (x[:, 5] % 5 == 0) > 0
    booster = lgb.train({"objective": "binary", "verbose": -1, "num_leaves": 31, "max_cat_to_onehot": 4},
                        lgb.Dataset(x, y.astype(float), feature_name=names, categorical_feature=[5]), 40)
    rows = rng.normal(size=(3000, 6))
    rows[rng.random(rows.shape) < 0.1] = np.nan
    rows[:, 5] = rng.integers(-3, 450, size=len(rows))
    rows[::7, 2], rows[::11, 2], rows[::13, 3], rows[::17, 3] = 0.0, -0.0, np.inf, -np.inf
    # Three rows per threshold: one ulp below it, on it, and one ulp above, in an otherwise random row.
    edges = [(f, t) for f, ts in thresholds(booster).items() for t in sorted(ts)]
    near = rows[rng.integers(0, len(rows), size=3 * len(edges))]
    for i, (feature, threshold) in enumerate(edges):
        near[3 * i:3 * i + 3, feature] = np.nextafter(threshold, -np.inf), threshold, np.nextafter(threshold, np.inf)
    rows = np.vstack([rows, near])
    frame = pd.DataFrame(rows, columns=names)
    frame.insert(0, "id", np.arange(len(rows)))
    frame.to_parquet(os.path.join(work, "rows.parquet"))
    booster.save_model(os.path.join(work, "model.txt"))
    return booster.predict(rows).view(np.uint64)


def test_a_java_spark_job_scores_bit_identically_on_debian_11(root, job_classes, tmp_path):
    arch, path = root
    expected = model_and_rows(str(tmp_path))
    java = f"/usr/lib/jvm/java-17-openjdk-{DEBIAN_ARCH[arch]}/bin/java"
    # The root's aarch64 JVM runs under the static qemu build/debian_root.sh put there. The JIT
    # stops at C1: in a job this short, emulated C2 compiling cost more than it saved (131 s against 116).
    command = (["/usr/bin/qemu-aarch64-static"] if arch == "aarch64" else []) + [
        java, "-Xmx2g", "-XX:TieredStopAtLevel=1", *[f"--add-opens={p}=ALL-UNNAMED" for p in OPENS], "-Djava.io.tmpdir=/tmp",
        "-cp", f"/opt/job:/opt/treescore/{os.path.basename(LINE_JAR)}:/opt/spark/*",
        "ScoreJob", "/opt/work/model.txt", "/opt/work/rows.parquet", "/opt/work/out"]
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOCAL_HOSTNAME": "localhost"}
    with mounted(path, {SPARK_JARS: "/opt/spark", os.path.dirname(LINE_JAR): "/opt/treescore", job_classes: "/opt/job"},
                 {str(tmp_path): "/opt/work"}):
        done = subprocess.run(["chroot", path, *command], env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    assert f"loaded native library libtreescore_jni.so for linux/{arch}" in done.stdout + done.stderr
    for engine in ("treescore", "lightgbm"):
        with open(tmp_path / f"out.{engine}") as f:
            got = np.array([int(line, 16) for line in f], dtype=np.uint64)
        assert got.shape == expected.shape, (engine, got.shape)
        differ = np.flatnonzero(got != expected)
        assert differ.size == 0, f"{engine} on {arch}: {differ.size} rows differ, first {differ[:5]}"
