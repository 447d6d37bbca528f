"""treescore from a Spark Connect client without py4j: a local Connect server started here with
the treescore jar and extensions, and a client virtualenv holding only pyspark-client (the
Connect-only PySpark) and the built treescore wheel. Scores must equal Booster.predict."""
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import numpy as np
import pyspark
import pytest

import treescore
from conftest import assert_same_bits, built_wheel, features, write_parquet

MAJOR, MINOR = (int(p) for p in pyspark.__version__.split(".")[:2])
# The client of the server's own line where PyPI has one; PyPI's newest pyspark-client can lag
# the newest Spark line (4.3 had none), and then the newest older client talks to the newer
# server, as Connect clients do after a server upgrade.
CLIENT = f"pyspark-client>=4.0,<{MAJOR}.{MINOR + 1}"

CLIENT_SCRIPT = textwrap.dedent("""
    import contextlib, io, json, sys
    try:
        import py4j  # noqa: F401
        sys.exit("py4j is importable in the Connect client's virtualenv")
    except ImportError:
        pass
    from pyspark.sql import SparkSession, functions as F
    import treescore

    url, data, model_file, text_file, out = sys.argv[1:]
    features = [f"x{i}" for i in range(8)]
    spark = SparkSession.builder.remote(url).getOrCreate()
    assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
    df = spark.read.parquet(data)
    by_path = treescore.Model.load(model_file)  # the server reads the file
    with open(text_file) as f:
        by_text = treescore.Model.from_string(f.read())  # the text travels with the query
    scored = df.orderBy("id").select(
        treescore.score(by_path).alias("reg"),
        treescore.score(by_text, *[F.col(c) for c in features]).alias("bin"),
        treescore.score(by_path, kind="contrib", num_iterations=10).alias("contrib"),
        treescore.score(treescore.Ensemble([by_path, by_text], weights=[0.25, 0.75], combine="sum")).alias("blend"),
        treescore.score(treescore.Ensemble([by_path, treescore.Member(by_text, raw=True)], weights=[0.25, 0.75],
                                           combine="sum"), kind="contrib").alias("blend_contrib"),
        treescore.score_grid(by_text, vary={"x1": [-1.0, 0.5]}).alias("grid"))
    plan = io.StringIO()
    with contextlib.redirect_stdout(plan):
        scored.explain()
    rows = scored.collect()

    # A client's own rows travel in the plan as local data, which Spark's optimizer would fold.
    import pandas as pd
    local = spark.createDataFrame(pd.read_parquet(data)).select("id", treescore.score(by_path).alias("reg"))
    local_plan = io.StringIO()
    with contextlib.redirect_stdout(local_plan):
        local.explain()
    local_rows = sorted((r["id"], r["reg"]) for r in local.collect())

    treescore.register(spark, "reg_named", by_path)
    df.createOrReplaceTempView("t")
    named = spark.sql("SELECT treescore_score('reg_named') FROM t ORDER BY id").collect()

    best = treescore.top_k(df, by_path, 5, score_col="s")
    top_plan = io.StringIO()
    with contextlib.redirect_stdout(top_plan):
        best.explain()
    top = [[r["id"], r["s"]] for r in best.select("id", "s").collect()]
    approx = treescore.top_k(df, by_path, 3, score_col="s", cheap=by_text, oversample=4)
    approx_top = [[r["id"], r["s"]] for r in approx.df.select("id", "s").collect()]

    def error(action):
        try:
            action()
        except Exception as e:
            return f"{type(e).__name__}: {e}"
        return None

    result = {
        "plan": plan.getvalue(),
        "reg": [r["reg"] for r in rows], "bin": [r["bin"] for r in rows],
        "contrib": [list(r["contrib"]) for r in rows], "blend": [r["blend"] for r in rows],
        "blend_contrib": [list(r["blend_contrib"]) for r in rows],
        "grid": [list(r["grid"]) for r in rows], "named": [r[0] for r in named],
        "local_plan": local_plan.getvalue(), "local": [reg for _, reg in local_rows],
        "top_plan": top_plan.getvalue(), "top": top, "approx_top": approx_top, "filtered": approx.rows_filtered(),
        "unknown": error(lambda: spark.sql("SELECT treescore_score('nope', 1.0)").collect()),
        "missing": error(lambda: treescore.register(spark, "gone", "/no/such/model.txt")),
        "in_memory": error(lambda: treescore.register(spark, "text_model", by_text)),
        "enable": treescore.enable(spark),
        "feature_names": by_text.feature_names, "num_features": by_text.num_features,
    }
    with open(out, "w") as f:
        json.dump(result, f)
    spark.stop()
    print("CONNECT-OK")
""")


def _free_ports(count: int) -> list:
    """`count` distinct free ports: each socket stays bound until all are chosen."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]


def _wait_until_serving(server: subprocess.Popen, log_path: str, timeout: float = 180) -> None:
    """Waits for the server's own word that Connect listens: an open port alone could be another
    service's, and a client talking gRPC to it would wait forever."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"the Connect server exited ({server.returncode}):\n" + open(log_path).read()[-5000:])
        with open(log_path) as log:
            if "Spark Connect server started" in log.read():
                return
        time.sleep(1)
    raise AssertionError("the Connect server did not start within 180 s:\n" + open(log_path).read()[-5000:])


def _client_venv(tmp_path, wheel: str) -> str:
    """A virtualenv with pyspark-client (which brings pandas, pyarrow and gRPC) and treescore,
    installed without its dependencies so that neither full PySpark nor py4j comes along."""
    venv = tmp_path / "client-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    # pandas below 3, as treescore's own extras pin it: PySpark 4.0 predates pandas 3.
    for args in ([CLIENT, "pandas>=2.0,<3"], ["--no-deps", wheel]):
        done = subprocess.run([python, "-m", "pip", "install", "--quiet", *args], capture_output=True, text=True,
                              timeout=900)
        assert done.returncode == 0, done.stdout + done.stderr
    return python


@contextlib.contextmanager
def connect_server(tmp_path, extensions: bool):
    """A local Spark Connect server with treescore's jar, and its extensions if `extensions`;
    yields its URL, and stops it on every path."""
    # Connect's port and the driver's own ports, each chosen here: left to Spark, the driver's
    # random ports could take the one Connect is about to bind.
    port, driver_port, block_manager_port = _free_ports(3)
    log_path = str(tmp_path / "connect-server.log")
    jar = treescore.jar_path()
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    command = [
        os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-submit"), "--master", "local[2]",
        "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
        "--jars", jar, "--driver-class-path", jar,
        *(["--conf", f"spark.sql.extensions={treescore.session.EXTENSIONS}"] if extensions else []),
        "--conf", f"spark.connect.grpc.binding.port={port}",
        "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf", "spark.ui.enabled=false", "--conf", "spark.driver.host=127.0.0.1",
        "--conf", "spark.driver.bindAddress=127.0.0.1", "--conf", f"spark.driver.port={driver_port}",
        "--conf", f"spark.blockManager.port={block_manager_port}", "spark-internal",
    ]
    with open(log_path, "w") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        _wait_until_serving(server, log_path)
        yield f"sc://127.0.0.1:{port}"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def run_client(python: str, script: str, *args: str, cwd: str) -> subprocess.CompletedProcess:
    """Runs `script` in the client venv's python, from outside the source tree."""
    client_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "SPARK_HOME")}
    # pyspark-client 4.2.0 looks for a Spark installation when pyspark.sql.connect is first
    # imported (its dependency check imports pyspark.testing, which calls _find_spark_home)
    # and exits without one; any existing folder satisfies it, and nothing is read from it.
    client_env["SPARK_HOME"] = os.path.join(os.path.dirname(os.path.dirname(python)), "lib")
    return subprocess.run([python, "-c", script, *args], cwd=cwd, capture_output=True, text=True, timeout=600,
                          env=client_env)


@pytest.fixture(scope="module")
def client_python(tmp_path_factory) -> str:
    return _client_venv(tmp_path_factory.mktemp("connect-client"), built_wheel())


@pytest.mark.slow
def test_scores_from_a_connect_client_without_py4j(tmp_path, client_python, regression_booster, binary_booster):
    python = client_python

    x = features(1500, seed=31)
    data = str(tmp_path / "rows.parquet")
    write_parquet(data, x, np.zeros(x.shape, dtype=bool))
    model_file, text_file = str(tmp_path / "regression.txt"), str(tmp_path / "binary.txt")
    regression_booster.save_model(model_file)
    binary_booster.save_model(text_file)

    with connect_server(tmp_path, extensions=True) as url:
        out = str(tmp_path / "client.json")
        done = run_client(python, CLIENT_SCRIPT, url, data, model_file, text_file, out, cwd=str(tmp_path))
        assert done.returncode == 0 and "CONNECT-OK" in done.stdout, done.stdout + done.stderr

    with open(out) as f:
        got = json.load(f)
    reg, binary = regression_booster.predict(x), binary_booster.predict(x)
    assert "BatchScore" in got["plan"], got["plan"]
    assert_same_bits(got["reg"], reg)
    assert_same_bits(got["named"], reg)
    assert "BatchScore" in got["local_plan"], got["local_plan"]
    assert_same_bits(got["local"], reg)
    assert_same_bits(got["bin"], binary)
    assert_same_bits(np.array(got["contrib"]), regression_booster.predict(x, pred_contrib=True, num_iteration=10))
    assert_same_bits(got["blend"], 0.25 * reg + 0.75 * binary)
    assert_same_bits(np.array(got["blend_contrib"]), 0.25 * regression_booster.predict(x, pred_contrib=True) +
                     0.75 * binary_booster.predict(x, pred_contrib=True))
    for k, value in enumerate([-1.0, 0.5]):
        at_value = x.copy()
        at_value[:, 1] = value
        assert_same_bits(np.array(got["grid"])[:, k], binary_booster.predict(at_value))
    # Top-K through Connect: the server's rule selects, and the rows are the 5 best, bit for bit.
    assert "top 5 by treescore_score#" in got["top_plan"], got["top_plan"]
    top = {int(i): v for i, v in got["top"]}
    assert len(top) == 5 and set(np.flatnonzero(reg > np.sort(reg)[-5]).tolist()) <= set(top)
    assert_same_bits([top[i] for i in sorted(top)], reg[sorted(top)])
    assert len(got["approx_top"]) == 3 and got["filtered"] == len(reg) - 12
    assert "AnalysisException" in got["unknown"] and "no model is registered as 'nope'" in got["unknown"]
    assert got["missing"] is not None and "/no/such/model.txt" in got["missing"]
    assert got["in_memory"] is not None and "register a model by a path" in got["in_memory"]
    assert got["enable"] is False  # the server has treescore's extensions: nothing to do
    # A client's model facts come from the server's reading of the text.
    assert got["feature_names"] == binary_booster.feature_name() and got["num_features"] == x.shape[1]


ENABLE_SCRIPT = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession
    import treescore

    spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
    try:
        treescore.enable(spark)
        print("ENABLED")
    except RuntimeError as e:
        print("REFUSED", e)
""")


@pytest.mark.slow
def test_enable_on_a_connect_server_without_the_extensions_says_how_to_start_it(tmp_path, client_python):
    with connect_server(tmp_path, extensions=False) as url:
        done = run_client(client_python, ENABLE_SCRIPT, url, cwd=str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("REFUSED treescore: this Spark Connect server does not have treescore's extensions"), \
        done.stdout
    assert "spark.sql.extensions=treescore.TreescoreExtensions" in done.stdout
