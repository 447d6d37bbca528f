"""A model over spark.treescore.broadcast.thresholdBytes reaches each executor once, not once per
task: proven on a local cluster of two executor JVMs by the executors' own logs."""
import json
import os
import pathlib
import re
import subprocess
import sys
import warnings

import numpy as np
import pyspark
import pytest

from conftest import assert_same_bits, features, train, write_parquet

HERE = pathlib.Path(__file__).parent


@pytest.mark.slow
def test_a_large_model_arrives_once_per_executor_and_its_metrics_reach_the_ui(tmp_path):
    booster = train("regression", rounds=60, seed=23)
    model_file = tmp_path / "model.txt"
    booster.save_model(str(model_file))
    assert model_file.stat().st_size > 64 * 1024  # over the job's threshold of 64k
    data = tmp_path / "rows.parquet"
    x = features(16_000, seed=29)
    write_parquet(str(data), x, np.isnan(x))
    # A local cluster's workers keep executor logs under SPARK_HOME/work: a SPARK_HOME of links
    # to the pyspark install keeps them in this test's folder.
    spark_home = tmp_path / "spark"
    spark_home.mkdir()
    for part in ("bin", "jars"):
        (spark_home / part).symlink_to(pathlib.Path(pyspark.__file__).parent / part)
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_HOME": str(spark_home)}
    done = subprocess.run([sys.executable, str(HERE / "helpers" / "cluster_broadcast_job.py"), str(model_file), str(data)],
                          capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-5000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["broadcast"] is True

    # Scores are LightGBM's, bit for bit.
    expected = booster.predict(x)
    for run in ("scores", "scores_again"):
        assert_same_bits(np.array([report[run][str(i)] for i in range(len(x))]), expected)

    # Each executor logged the model's arrival once, though it ran many tasks, over two jobs. An
    # executor that Spark replaced before its first task never saw the model: a warning, not a failure.
    arrival = f"treescore: model {report['model_hash'][:12]} ({report['model_bytes']} bytes) arrived in this JVM"
    tasks_run = {}
    for log in sorted((spark_home / "work" / report["app_id"]).glob("*/stderr")):
        text = log.read_text()
        ran = len(re.findall(r"Running task \d+\.\d+ in stage", text))
        if ran:
            assert text.count(arrival) == 1, log
            tasks_run[log.parent.name] = ran
        else:
            assert arrival not in text, log
            warnings.warn(f"executor {log.parent.name} ran no task; its log ends:\n{text[-1500:]}")
    assert len(tasks_run) == 2, tasks_run
    assert sum(tasks_run.values()) >= 32 and min(tasks_run.values()) >= 2, tasks_run

    # The Spark UI's REST API shows the operator's metrics for the scoring query.
    batch_nodes = [node for execution in report["sql"] for node in execution.get("nodes", [])
                   if node["nodeName"] == "BatchScore"]
    assert batch_nodes, [e.get("description") for e in report["sql"]]
    metrics = {m["name"]: m["value"] for m in batch_nodes[0]["metrics"]}
    assert metrics["rows scored"].replace(",", "") == "16000", metrics
    assert {"batches", "native scoring time", "model load time"} <= metrics.keys()
