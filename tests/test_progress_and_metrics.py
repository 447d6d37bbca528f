"""`treescore score` reports progress on the console; the operator's metrics reach Spark's UI store."""
import re

import numpy as np

from conftest import feature_frame, features, train, write_parquet
from test_cli import run_cli
from treescore import Model, score

PROGRESS = re.compile(r"^treescore: scored ([\d,]+) of ([\d,]+) rows \((\d+)%\), ([\d,]+) rows/s$")


def test_score_command_prints_progress_up_to_every_row(tmp_path, regression_booster):
    data, model, out = tmp_path / "in", tmp_path / "model.txt", tmp_path / "out.parquet"
    data.mkdir()
    x = features(60_000, seed=43)
    for part in range(6):  # several files, several tasks
        rows = slice(part * 10_000, (part + 1) * 10_000)
        write_parquet(str(data / f"part-{part}.parquet"), x[rows], np.zeros(x[rows].shape, dtype=bool))
    regression_booster.save_model(str(model))

    done = run_cli("score", "--model", str(model), "--input", str(data), "--output", str(out),
                   "--master", "local[2]", "--progress-interval", "0.2")
    assert done.returncode == 0, done.stderr
    lines = [m for m in map(PROGRESS.match, done.stderr.splitlines()) if m]
    assert len(lines) >= 2, done.stderr
    scored = [int(m.group(1).replace(",", "")) for m in lines]
    assert all(int(m.group(2).replace(",", "")) == 60_000 for m in lines)
    assert scored == sorted(scored)  # never goes back
    assert scored[-1] == 60_000 and lines[-1].group(3) == "100"
    assert int(lines[-1].group(4).replace(",", "")) > 0
    assert "scored 60,000 rows" in done.stdout


def test_score_command_progress_can_be_turned_off(tmp_path, regression_booster):
    x = features(2_000, seed=44)
    data, model, out = tmp_path / "in.parquet", tmp_path / "model.txt", tmp_path / "out.parquet"
    write_parquet(str(data), x, np.zeros(x.shape, dtype=bool))
    regression_booster.save_model(str(model))
    done = run_cli("score", "--model", str(model), "--input", str(data), "--output", str(out),
                   "--master", "local[1]", "--progress-interval", "0")
    assert done.returncode == 0, done.stderr
    assert not any(map(PROGRESS.match, done.stderr.splitlines()))


def _first_number(text: str) -> float:
    """The total from a Spark UI metric string such as '5,000' or 'total (min, med, max ...)\\n1.2 ms (...)'."""
    last_line = text.strip().splitlines()[-1]
    return float(re.search(r"[\d.,]+", last_line).group(0).replace(",", ""))


def test_operator_metrics_are_in_the_sql_status_store_the_ui_reads(spark, tmp_path):
    frame, _ = feature_frame(spark, tmp_path, 5_000, seed=45)
    # New to this JVM, so it is loaded; large enough that loading takes a measurable millisecond.
    model = Model.from_booster(train("regression", rounds=150, seed=46))
    frame.select(score(model).alias("p")).write.parquet(str(tmp_path / "out"))

    store = spark._jsparkSession.sharedState().statusStore()
    executions = store.executionsList()
    found = {}
    for i in range(executions.size()):
        execution = executions.apply(i)
        names = {}
        metrics = execution.metrics()
        for j in range(metrics.size()):
            metric = metrics.apply(j)
            names[metric.accumulatorId()] = metric.name()
        measured = {}
        entries = store.executionMetrics(execution.executionId()).iterator()
        while entries.hasNext():
            entry = entries.next()
            if entry._1() in names:
                measured[names[entry._1()]] = entry._2()
        if measured.get("rows scored", "").replace(",", "") == "5000":
            found = measured
    assert found, "no execution with treescore's metrics and 5,000 rows scored"
    assert _first_number(found["batches"]) >= 1
    assert _first_number(found["native scoring time"]) > 0
    assert _first_number(found["model load time"]) > 0
