"""The examples a user copies from: each runs here, and its output is checked against lightgbm."""
import os
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pyspark
import pytest

import treescore
from conftest import MAVEN_REPOSITORY, assert_same_bits, features, write_parquet

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCALA_JOB = os.path.join(ROOT, "examples", "scala-job")


def run(command, cwd=None, **extra_env):
    """Runs a command; on failure the assertion shows the end of its output."""
    # spark-submit finds its Spark through `python3` on PATH unless SPARK_HOME says where it is.
    env = {**os.environ, "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
           "SPARK_HOME": os.path.dirname(pyspark.__file__), **extra_env}
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"{command[0]} failed:\n{(done.stdout + done.stderr)[-4000:]}"


@pytest.mark.slow
def test_scala_job_built_with_sbt_from_the_maven_artifact_scores_like_lightgbm(regression_booster, tmp_path):
    """examples/scala-job: an sbt project of its own that depends on treescore's Maven artifact (from
    dev/release's repository), run by spark-submit --packages with the same coordinate."""
    spark_jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    line = treescore.jars.spark_line(pyspark.__version__)
    # build/sbt resolves from its own repositories only, plus the one this variable names.
    run([os.path.join(ROOT, "build", "sbt"), f"-Dtreescore.version={treescore.__version__}", f"-Dspark.line={line}",
         f"-Dspark.jars.dir={spark_jars}", "package"], cwd=SCALA_JOB, TREESCORE_SBT_REPOSITORY=MAVEN_REPOSITORY)
    job_jar = os.path.join(SCALA_JOB, "target", "example-job.jar")
    model_path = tmp_path / "model.txt"
    regression_booster.save_model(str(model_path))
    x = features(5_000, seed=71)
    write_parquet(str(tmp_path / "in.parquet"), x, np.zeros(x.shape, dtype=bool))

    spark_submit = os.path.join(os.path.dirname(sys.executable), "spark-submit")
    run([spark_submit, "--master", "local[2]", "--packages", treescore.coordinate(),
         "--repositories", MAVEN_REPOSITORY, "--conf", f"spark.jars.ivy={tmp_path / 'ivy'}",
         "--class", "example.ScoreJob", job_jar, str(model_path), str(tmp_path / "in.parquet"), str(tmp_path / "out")])

    out = pq.read_table(str(tmp_path / "out")).to_pandas().sort_values("id")
    assert out["id"].tolist() == list(range(len(x)))
    assert_same_bits(out["score"].to_numpy(), regression_booster.predict(x))


def test_the_talks_workload_example_runs_and_matches_its_reference():
    """examples/demand_whatif.py: what-if curves over a discount, in a session of its own (default engine)."""
    done = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "demand_whatif.py"), "4000"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "curves equal the lightgbm + NumPy reference for all 4,000 rows x 15 discounts" in done.stdout
    assert "batched operators in the plan: 1" in done.stdout
