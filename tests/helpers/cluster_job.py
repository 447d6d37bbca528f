"""A scoring job as a user would submit it: run by test_cluster.py with the python of a fresh
virtual environment with only the treescore wheel (and its demo extras) installed, from outside the source
tree, in client mode against a standalone master (or local mode, for the reference run).

    python cluster_job.py --master spark://127.0.0.1:7077 --model model.txt --data rows/ --out scored/
        [--conf key=value ...] [--fail-partition 3] [--sleep 1.5] [--report report.json]

It scores every row of the Parquet files in --data with the model and writes (id, score) as
Parquet to --out. --fail-partition and --sleep put a Python step before scoring that fails the
first attempt of that partition's task, and holds every task for that many seconds (so that the
test can kill a worker while the job runs); without them no Python runs on the executors (their
Python is set to a path that does not exist, to prove it).
On start it prints `APP <application id> <web UI url>`; at the end it writes to --report what the
driver's REST API says about the job's tasks and executors.
"""
import argparse
import json
import os
import sys
import time
import urllib.request

import treescore
from pyspark.sql import SparkSession


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--master", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--conf", action="append", default=[], help="key=value, passed to the session")
    parser.add_argument("--fail-partition", type=int, default=None)
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--report", default=None)
    return parser.parse_args()


def fault_injector(fail_partition, sleep):
    """A pass-through over Arrow batches that fails one task's first attempt and delays every task."""
    def gate(batches):
        from pyspark import TaskContext

        context = TaskContext.get()
        if context.partitionId() == fail_partition and context.attemptNumber() == 0:
            raise RuntimeError(f"deliberate failure of the first attempt of partition {fail_partition}")
        time.sleep(sleep)
        yield from batches
    return gate


def rest(ui_url, app_id, what):
    with urllib.request.urlopen(f"{ui_url}/api/v1/applications/{app_id}/{what}", timeout=30) as response:
        return json.load(response)


def main():
    args = parse_args()
    assert "/site-packages/treescore/" in treescore.__file__, f"not the installed wheel: {treescore.__file__}"
    inject_faults = args.fail_partition is not None or args.sleep > 0
    # Scoring runs no Python on executors: without fault injection, their Python is one that does not
    # exist, so the job would fail if any ran. Fault injection is Python: it gets this interpreter.
    os.environ["PYSPARK_PYTHON"] = sys.executable if inject_faults else "/nonexistent/no-python-on-executors"
    builder = SparkSession.builder.master(args.master).appName("treescore-cluster-job")
    for setting in args.conf:
        key, value = setting.split("=", 1)
        builder.config(key, value)
    spark = treescore.configure(builder).getOrCreate()
    context = spark.sparkContext
    print("APP", context.applicationId, context.uiWebUrl, flush=True)

    model = treescore.Model.load(args.model)
    rows = spark.read.parquet(args.data)
    if inject_faults:
        rows = rows.mapInArrow(fault_injector(args.fail_partition, args.sleep), rows.schema)
    scored = rows.select("id", treescore.score(model).alias("score"))
    plan = scored._jdf.queryExecution().executedPlan().toString()
    assert "BatchScore" in plan, plan
    scored.write.mode("error").parquet(args.out)

    if args.report:
        report = {
            "stages": rest(context.uiWebUrl, context.applicationId, "stages?details=true&withSummaries=false"),
            "executors": rest(context.uiWebUrl, context.applicationId, "allexecutors"),
        }
        with open(args.report, "w") as out:
            json.dump(report, out)
    spark.stop()
    print("JOB-OK", flush=True)


if __name__ == "__main__":
    sys.exit(main())
