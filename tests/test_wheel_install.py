"""The built wheel, installed into a fresh virtual environment, scores from outside the source tree."""
import subprocess
import textwrap
from pathlib import Path

import pytest

# The repository's wire codes, which SCRIPT (run with their path as its argument) compares with the wheel's.
WIRE_CODES = Path(__file__).resolve().parents[1] / "wire" / "codes.txt"

SCRIPT = textwrap.dedent("""
    import sys
    from importlib import resources
    import lightgbm as lgb, numpy as np, treescore
    from pyspark.sql import SparkSession

    assert "/site-packages/treescore/" in treescore.__file__, treescore.__file__
    # The wire codes' one definition travels in the wheel, as the repository has it.
    carried = resources.files("treescore").joinpath("wire_codes.txt").read_text(encoding="utf-8")
    assert carried == open(sys.argv[1], encoding="utf-8").read(), "the wheel's wire codes differ from wire/codes.txt"
    assert "median" in treescore.wire.COMBINE_RULES and "contrib" in treescore.wire.PREDICT_KINDS
    rng = np.random.default_rng(0)
    x = rng.normal(size=(20000, 4))
    x[rng.random(x.shape) < 0.05] = np.nan
    booster = lgb.train({"objective": "binary", "verbose": -1}, lgb.Dataset(x, (x[:, 0] > 0).astype(float)), 15)
    spark = treescore.configure(SparkSession.builder.master("local[2]")).getOrCreate()
    print("java", spark.sparkContext._jvm.System.getProperty("java.version"))
    import pandas as pd
    df = spark.createDataFrame(pd.DataFrame(x, columns=[f"Column_{i}" for i in range(4)]).assign(id=range(len(x))))
    model = treescore.Model.from_booster(booster)
    scored = df.repartition(3).withColumn("p", treescore.score(model)).orderBy("id")
    assert "BatchScore" in scored._jdf.queryExecution().executedPlan().toString()
    got = scored.toPandas()["p"].to_numpy()
    assert np.array_equal(got.view(np.uint64), booster.predict(x).view(np.uint64)), "scores differ in their bits"
    spark.stop()
    print("WHEEL-OK")
""")


@pytest.mark.slow
def test_wheel_scores_in_a_fresh_virtualenv(tmp_path, wheel_venv):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "job.py").write_text(SCRIPT)
    done = subprocess.run([wheel_venv.python, "job.py", str(WIRE_CODES)], cwd=outside, capture_output=True, text=True, timeout=600,
                          env=wheel_venv.env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WHEEL-OK" in done.stdout
