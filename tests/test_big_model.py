"""A 300 MB model file: validated, loaded and scored exactly like lightgbm, in bounded time.

The file is synthesised: the trees of a trained 255-leaf model repeated until the text is
300 MB, renumbered, with tree_sizes recomputed so the file is as LightGBM would write it. The
repeats have every leaf value set to 0, so each adds exactly +0.0 to LightGBM's sum and the
big model predicts bit for bit what the trained one does: lightgbm checks the small model in
a second, where loading the 300 MB file into lightgbm would take minutes. The Spark side runs
in a child process (big_model_job.py) whose driver has the memory a 300 MB model needs (the
test session's driver has Spark's default 1 GB)."""
import json
import os
import re
import subprocess
import sys
import time

import lightgbm as lgb
import numpy as np
import pytest

from conftest import FEATURE_NAMES, assert_same_bits, features, target, write_parquet

TARGET_BYTES = 300 * 1024 * 1024


def zero_leaves(block: str) -> str:
    return re.sub(r"(?m)^leaf_value=.*$", lambda m: "leaf_value=" + " ".join(["0"] * len(m.group(0).split(" "))), block)


def replicate_trees(text: str, target_bytes: int) -> str:
    """The model with its trees repeated, leaves zeroed, until the text reaches target_bytes."""
    header, rest = text.split("\nTree=0\n", 1)
    body, trailer = ("Tree=0\n" + rest).split("end of trees\n", 1)
    blocks = re.split(r"(?m)^(?=Tree=\d+\n)", body)[1:]
    blocks = [block.split("\n", 1)[1] for block in blocks]  # without their "Tree=i" line
    zeroed = [zero_leaves(block) for block in blocks]
    copies = max(1, target_bytes // len("".join(zeroed).encode()) + 1)
    trees = []
    for i in range(copies * len(blocks)):
        trees.append(f"Tree={i}\n" + (blocks if i < len(blocks) else zeroed)[i % len(blocks)])
    sizes = " ".join(str(len(tree.encode())) for tree in trees)
    header = re.sub(r"(?m)^tree_sizes=.*$", "tree_sizes=" + sizes, header)
    return header + "\n" + "".join(trees) + "end of trees\n" + trailer


@pytest.mark.slow
def test_a_300_mb_model_scores_exactly(tmp_path):
    x = features(20_000, seed=5)
    params = {"objective": "regression", "num_leaves": 255, "verbose": -1, "num_threads": 1, "min_data_in_leaf": 5}
    small = lgb.train(params, lgb.Dataset(x, target(x), feature_name=FEATURE_NAMES), 10)
    big_text = replicate_trees(small.model_to_string(), TARGET_BYTES)
    model_path = tmp_path / "big.txt"
    model_path.write_text(big_text)
    assert model_path.stat().st_size >= TARGET_BYTES
    rows = features(2_000, seed=6)
    write_parquet(str(tmp_path / "rows.parquet"), rows, np.zeros(rows.shape, dtype=bool))
    del big_text

    expected = small.predict(rows, num_threads=1)
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    job = os.path.join(os.path.dirname(__file__), "helpers", "big_model_job.py")
    started = time.monotonic()
    done = subprocess.run([sys.executable, job, str(model_path), str(tmp_path / "rows.parquet"), str(tmp_path), "3g"],
                          env=env, capture_output=True, text=True, timeout=300)
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-4000:]
    timings = json.loads((tmp_path / "timings.json").read_text())
    print(f"300 MB model: {timings}, child process {elapsed:.1f} s")
    assert timings["num_trees"] > 10_000
    actual = np.load(tmp_path / "scores.npy")
    assert_same_bits(actual.view(np.int64), expected.view(np.int64))
    # A minute on a quiet 2-core machine is the aim; the bound leaves room for a loaded CI host
    # (3 minutes measured with the load average at 17 on 2 cores) while still catching a model
    # that is parsed again per task or per batch.
    assert timings["load_and_validate_s"] + timings["score_s"] < 240, timings
