"""The examples a user copies from: each runs here, and its output is checked against lightgbm."""
import os
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pyspark
import pytest

import treescore
from conftest import features, write_parquet

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCALA_JOB = os.path.join(ROOT, "examples", "scala-job")


def run(command, cwd=None):
    """Runs a command; on failure the assertion shows the end of its output."""
    # spark-submit finds its Spark through `python3` on PATH unless SPARK_HOME says where it is.
    env = {**os.environ, "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
           "SPARK_HOME": os.path.dirname(pyspark.__file__)}
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"{command[0]} failed:\n{(done.stdout + done.stderr)[-4000:]}"


@pytest.mark.slow
def test_scala_job_built_with_sbt_scores_like_lightgbm(regression_booster, tmp_path):
    """examples/scala-job: an sbt project of its own, compiled against the wheel's jar, run by spark-submit."""
    spark_jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    run([os.path.join(ROOT, "build", "sbt"), f"-Dtreescore.jar={treescore.jar_path()}", f"-Dspark.jars.dir={spark_jars}",
         "package"], cwd=SCALA_JOB)
    job_jar = os.path.join(SCALA_JOB, "target", "example-job.jar")
    model_path = tmp_path / "model.txt"
    regression_booster.save_model(str(model_path))
    x = features(5_000, seed=71)
    write_parquet(str(tmp_path / "in.parquet"), x, np.zeros(x.shape, dtype=bool))

    spark_submit = os.path.join(os.path.dirname(sys.executable), "spark-submit")
    run([spark_submit, "--master", "local[2]", "--jars", treescore.jar_path(), "--class", "example.ScoreJob",
         job_jar, str(model_path), str(tmp_path / "in.parquet"), str(tmp_path / "out")])

    out = pq.read_table(str(tmp_path / "out")).to_pandas().sort_values("id")
    assert out["id"].tolist() == list(range(len(x)))
    assert (out["score"].to_numpy() == regression_booster.predict(x)).all()


def test_the_talks_workload_example_runs_and_matches_its_reference():
    """examples/demand_whatif.py: what-if curves over a discount, in a session of its own (default engine)."""
    done = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "demand_whatif.py"), "4000"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "curves equal the lightgbm + NumPy reference for all 4,000 rows x 15 discounts" in done.stdout
    assert "batched operators in the plan: 1" in done.stdout
