"""Sessions that run already, as notebooks hand them over: treescore.enable(spark) gives a session
with treescore's jar but without its extensions the rules, strategy and SQL functions, so scores
plan through BatchScore with Booster.predict's bits; a second call does nothing. Until then,
building a score call warns once, in Python and in the driver's log, that it runs row at a time.
A driver without the jar gets an error that says how to add it, never py4j's
"'JavaPackage' object is not callable". Each case runs in a JVM of its own."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import treescore
from conftest import assert_same_bits, model_and_rows

JOB = textwrap.dedent("""
    import sys, warnings
    import numpy as np
    from pyspark.sql import SparkSession
    import treescore

    with_jar, work = sys.argv[1] == "with-jar", sys.argv[2]
    builder = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
    if with_jar:  # as a cluster library or --jars would: on the class path, no extensions
        builder = builder.config("spark.jars", treescore.jar_path()).config("spark.driver.extraClassPath",
                                                                            treescore.jar_path())
    spark = builder.getOrCreate()
    if not with_jar:
        for name, attempt in (("enable", lambda: treescore.enable(spark)),
                              ("load", lambda: treescore.Model.load(work + "/model.txt"))):
            try:
                attempt()
                print(name.upper(), "no error")
            except RuntimeError as e:
                print(name.upper(), str(e).replace("\\n", " "))
        sys.exit(0)

    model = treescore.Model.load(work + "/model.txt")
    rows = spark.read.parquet(work + "/rows.parquet")
    batched = lambda df: "BatchScore" in df._jdf.queryExecution().executedPlan().toString()

    def scored():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            df = rows.select("id", treescore.score(model).alias("s")).orderBy("id")
        told = [w for w in caught if "one row at a time" in str(w.message)]
        return df, len(told)

    before, told_first = scored()
    _, told_again = scored()
    np.save(work + "/before.npy", np.array([r.s for r in before.collect()]))
    print("BEFORE", batched(before), told_first, told_again)
    print("ENABLED", treescore.enable(spark), treescore.enable(spark))
    after, told_after = scored()
    np.save(work + "/after.npy", np.array([r.s for r in after.collect()]))
    print("AFTER", batched(after), told_after)
    treescore.register(spark, "m", model)
    names = ", ".join(f for f in rows.columns if f != "id")
    in_sql = spark.sql(f"SELECT id, treescore_score('m', {names}) AS s FROM parquet.`{work}/rows.parquet` ORDER BY id")
    np.save(work + "/sql.npy", np.array([r.s for r in in_sql.collect()]))
    print("SQL", batched(in_sql))
""")


def run(mode: str, work) -> tuple:
    done = subprocess.run([sys.executable, "-c", JOB, mode, str(work)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    seen = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in done.stdout.splitlines()
            if line.split(" ", 1)[0] in ("BEFORE", "ENABLED", "AFTER", "SQL", "ENABLE", "LOAD")}
    return seen, done.stderr


@pytest.fixture(scope="module")
def work(tmp_path_factory, regression_booster):
    folder = tmp_path_factory.mktemp("running")
    return folder, model_and_rows(folder, regression_booster, 2_000, seed=89)


def test_enable_gives_a_running_session_batched_exact_scores_and_sql(work):
    folder, expected = work
    seen, log = run("with-jar", folder)
    # Before: row at a time, said once in Python and once in the driver's log.
    assert seen["BEFORE"] == "False 1 0", seen
    assert log.count("this session does not have treescore's extensions") == 1, log[-3000:]
    assert seen["ENABLED"] == "True False", seen  # the second call does nothing
    assert seen["AFTER"] == "True 0", seen
    assert seen["SQL"] == "True", seen
    for name in ("before", "after", "sql"):
        assert_same_bits(np.load(folder / f"{name}.npy"), expected, name)


def test_a_driver_without_the_jar_is_told_how_to_add_it(work):
    folder, _ = work
    seen, _ = run("without-jar", folder)
    for attempt in ("ENABLE", "LOAD"):
        message = seen[attempt]
        assert message.startswith("treescore's jar is not on this Spark driver's class path"), message
        assert f"spark.jars.packages={treescore.coordinate()}" in message, message
        assert treescore.jar_path() in message and "JavaPackage" not in message, message
