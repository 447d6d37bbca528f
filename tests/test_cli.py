"""The treescore command line: `score` on Parquet, and the `demo` main job (small)."""
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq

from conftest import assert_same_bits, features, write_parquet


def run_cli(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "treescore.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**__import__("os").environ, "SPARK_LOCAL_IP": "127.0.0.1"})


def test_score_command_writes_parquet_equal_to_lightgbm(tmp_path, regression_booster):
    x = features(10_000, seed=41)
    data, model, out = tmp_path / "in.parquet", tmp_path / "model.txt", tmp_path / "out.parquet"
    write_parquet(str(data), x, np.zeros(x.shape, dtype=bool))
    regression_booster.save_model(str(model))

    done = run_cli("score", "--model", str(model), "--input", str(data), "--output", str(out), "--master", "local[2]")
    assert done.returncode == 0, done.stderr
    assert "scored 10,000 rows" in done.stdout
    result = pq.read_table(str(out)).to_pandas().sort_values("id")
    assert_same_bits(result["prediction"].to_numpy(), regression_booster.predict(x))


def test_score_command_names_a_missing_model(tmp_path):
    done = run_cli("score", "--model", str(tmp_path / "absent.txt"), "--input", str(tmp_path), "--output",
                   str(tmp_path / "o"), "--master", "local[1]")
    assert done.returncode != 0
    assert f"treescore: no model file at '{tmp_path / 'absent.txt'}'" in done.stderr


def test_demo_scores_both_ways_and_finds_them_equal():
    done = run_cli("demo", "--rows", "30000", "--features", "10", "--trees", "20", "--master", "local[2]")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "outputs equal: all 30,000 predictions are identical" in done.stdout
    assert "treescore" in done.stdout and "mapInPandas + lightgbm" in done.stdout
