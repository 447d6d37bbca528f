"""Concurrency through Spark: eight tasks at a time sharing one model, and three queries at once
with nine models each under a cache budget that holds one query's, waiting for room and evicting
while other tasks score, give lightgbm's scores and local[1]'s bit for bit, never charge more than
the budget, and free every evicted native model. The sessions run in a child process
(concurrency_job.py), as this process already holds the test session."""
import json
import os
import subprocess
import sys

import lightgbm as lgb
import numpy as np
import pytest

from conftest import FEATURE_NAMES, assert_same_bits, features, target, write_parquet

ROWS = 60_000
NUM_MODELS = 27  # three queries, each with six score columns and a route over three more


def small_model(seed: int) -> lgb.Booster:
    x = features(4_000, seed)
    params = {"objective": "regression", "num_leaves": 15, "verbose": -1, "num_threads": 1, "seed": seed}
    return lgb.train(params, lgb.Dataset(x, target(x) * seed, feature_name=FEATURE_NAMES), 15 + seed)


@pytest.mark.slow
def test_shared_and_evicted_models_score_like_one_thread_and_lightgbm(tmp_path):
    models_dir = tmp_path / "models"
    models_dir.mkdir()
    boosters = [small_model(seed) for seed in range(1, NUM_MODELS + 1)]
    for i, booster in enumerate(boosters):
        booster.save_model(str(models_dir / f"model{i}.txt"))
    x = features(ROWS, seed=77)
    write_parquet(str(tmp_path / "rows.parquet"), x, np.zeros(x.shape, dtype=bool))
    out = tmp_path / "out"
    out.mkdir()

    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    job = os.path.join(os.path.dirname(__file__), "helpers", "concurrency_job.py")
    done = subprocess.run([sys.executable, job, str(tmp_path), str(out)], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]

    def loaded(name):
        return np.load(out / f"{name}.npy")

    key = np.arange(ROWS) % 3
    for query in range(3):
        group = boosters[9 * query:9 * query + 9]
        expected = {f"m{i}": group[i].predict(x) for i in range(6)}
        expected["route"] = np.select([key == k for k in range(3)], [group[6 + k].predict(x) for k in range(3)])
        for name, values in expected.items():
            single = loaded(f"single{query}_{name}")
            assert_same_bits(single, values, f"local[1] {name} of query {query} differs from lightgbm")
            assert_same_bits(loaded(f"evicting{query}_{name}"), single,
                             f"{name} of query {query}, under eviction, differs from local[1]")
    assert_same_bits(loaded("shared_m0"), loaded("single0_m0"))

    report = json.loads((out / "report.json").read_text())
    assert report["live_models_before"] == 0
    assert report["evictions_after"] > report["evictions_before"], "the queries' models did not all fit at once"
    assert report["cached_bytes_after"] <= report["budget"]
    assert report["live_models_after"] == report["cached_after"], "every evicted model was freed"
