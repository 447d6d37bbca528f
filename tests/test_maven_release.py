"""treescore by Maven coordinate: dev/release's Maven repository (target/release/maven) passes the
checks Maven Central runs on a deployment (signatures aside), and Spark takes the artifact with
--packages from Python and from spark-shell, scoring in BatchScore with Booster.predict's bits.

Central's checks, as its publishing guide lists them: a POM with groupId, artifactId, version,
name, description, url, licenses, developers and scm; a sources jar and a javadoc jar beside the
jar; an .md5 and a .sha1 of every file, matching it; no SNAPSHOT version.
"""
import hashlib
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import numpy as np
import pyspark
import pytest

import treescore
from conftest import MAVEN_REPOSITORY, ROOT, assert_same_bits, built_wheel, model_and_rows

POM = "{http://maven.apache.org/POM/4.0.0}"
REPOSITORY = Path(ROOT, "target", "release", "maven")


def lines() -> list:
    """(line, pyspark release, Scala release) of every line in build/spark-lines.txt."""
    with open(os.path.join(ROOT, "build", "spark-lines.txt")) as f:
        return [tuple(row.split()[:3]) for row in f if row.strip() and not row.startswith("#")]


def artifact_folder(line: str, scala: str) -> Path:
    scala_binary = ".".join(scala.split(".")[:2])
    return REPOSITORY / "io" / "github" / "treescore" / f"treescore-spark_{line}_{scala_binary}" / treescore.__version__


def field(pom, path: str) -> str:
    """The text at `path` ("licenses/license/name") of a POM, stripped; empty if absent."""
    return (pom.findtext("/".join(POM + step for step in path.split("/"))) or "").strip()


@pytest.mark.parametrize("line,pyspark_release,scala", lines())
def test_each_line_is_a_deployment_central_would_take(line, pyspark_release, scala):
    folder = artifact_folder(line, scala)
    base = f"{folder.parent.name}-{treescore.__version__}"
    files = {p.name for p in folder.iterdir()}
    main = [f"{base}.pom", f"{base}.jar", f"{base}-sources.jar", f"{base}-javadoc.jar"]
    for name in main:
        assert name in files, (name, sorted(files))
        data = (folder / name).read_bytes()
        for algorithm in ("md5", "sha1"):
            recorded = (folder / f"{name}.{algorithm}").read_text().split()[0]
            assert recorded == hashlib.new(algorithm, data).hexdigest(), (name, algorithm)
    assert "SNAPSHOT" not in treescore.__version__

    pom = ET.parse(folder / f"{base}.pom").getroot()
    assert (field(pom, "groupId"), field(pom, "artifactId"), field(pom, "version")) == \
        ("io.github.treescore", folder.parent.name, treescore.__version__)
    for path in ("name", "description", "url", "licenses/license/name", "licenses/license/url",
                  "developers/developer/name", "scm/url", "scm/connection"):
        assert field(pom, path), f"the POM of {line} has no {path}"
    # Spark and Scala are the cluster's: provided. Nothing else is needed at run time.
    dependencies = {(d.findtext(f"{POM}groupId"), d.findtext(f"{POM}artifactId")):
                    (d.findtext(f"{POM}version"), d.findtext(f"{POM}scope"))
                    for d in pom.iter(f"{POM}dependency")}
    runtime = {k: v for k, v in dependencies.items() if v[1] not in ("provided", "test")}
    assert not runtime, runtime
    scala_binary = ".".join(scala.split(".")[:2])
    assert dependencies[("org.scala-lang", "scala-library")] == (scala, "provided")
    assert dependencies[("org.apache.spark", f"spark-sql_{scala_binary}")] == (pyspark_release, "provided")

    with zipfile.ZipFile(folder / f"{base}-sources.jar") as sources:
        assert "treescore/functions.scala" in sources.namelist()
    with zipfile.ZipFile(folder / f"{base}-javadoc.jar") as javadoc:
        assert "index.html" in javadoc.namelist()
    # The very jar the wheel carries for the line, native libraries and all.
    with zipfile.ZipFile(built_wheel()) as wheel:
        bundled = wheel.read(f"treescore/jars/treescore-spark-{line}.jar")
    assert hashlib.sha256(bundled).digest() == hashlib.sha256((folder / f"{base}.jar").read_bytes()).digest()


def test_the_coordinate_names_this_pyspark_line_and_its_scala():
    line = treescore.jars.spark_line(pyspark.__version__)
    scala = next(s for l, _, s in lines() if l == line)
    assert treescore.coordinate() == \
        f"io.github.treescore:treescore-spark_{line}_{'.'.join(scala.split('.')[:2])}:{treescore.__version__}"


@pytest.fixture(scope="module")
def scored_folder(tmp_path_factory, regression_booster):
    folder = tmp_path_factory.mktemp("packages")
    return folder, model_and_rows(folder, regression_booster, 3_000, seed=83)


PACKAGES_JOB = textwrap.dedent("""
    import sys
    import numpy as np
    from pyspark.sql import SparkSession
    import treescore

    work, repository = sys.argv[1:]
    builder = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
               .config("spark.jars.ivy", work + "/ivy"))
    spark = treescore.configure(builder, source="maven", repository=repository).getOrCreate()
    conf = spark.sparkContext.getConf()
    print("JARS", conf.get("spark.jars", ""))
    model = treescore.Model.load(work + "/model.txt")
    scored = spark.read.parquet(work + "/rows.parquet").select("id", treescore.score(model).alias("s"))
    print("BATCHED", "BatchScore" in scored._jdf.queryExecution().executedPlan().toString())
    np.save(work + "/scores.npy", np.array([r.s for r in scored.orderBy("id").collect()]))
""")


@pytest.mark.slow
def test_python_takes_the_coordinate_with_packages(scored_folder):
    work, expected = scored_folder
    done = subprocess.run([sys.executable, "-c", PACKAGES_JOB, str(work), MAVEN_REPOSITORY], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    seen = dict(line.split(" ", 1) for line in done.stdout.splitlines() if line.startswith(("JARS", "BATCHED")))
    # The jar came from the resolved coordinate, not from the wheel.
    assert f"treescore-spark_{treescore.jars.spark_line(pyspark.__version__)}" in seen["JARS"], seen
    assert "site-packages/treescore/jars" not in seen["JARS"], seen
    assert seen["BATCHED"] == "True"
    assert_same_bits(np.load(work / "scores.npy"), expected)


SHELL_SCRIPT = """
import treescore.functions.score
import treescore.model.TreeModel
val work = "{work}"
val scored = spark.read.parquet(work + "/rows.parquet").select(org.apache.spark.sql.functions.col("id"),
  score(TreeModel.load(work + "/model.txt")).as("s")).orderBy("id")
val bits = scored.collect().map(r => java.lang.Long.toHexString(java.lang.Double.doubleToRawLongBits(r.getDouble(1))))
java.nio.file.Files.write(java.nio.file.Paths.get(work + "/shell-scores.txt"), bits.mkString("\\n").getBytes)
println("BATCHED " + scored.queryExecution.executedPlan.toString.contains("BatchScore"))
:quit
"""


@pytest.mark.slow
def test_spark_shell_takes_the_coordinate_with_packages(scored_folder):
    work, expected = scored_folder
    spark_home = os.path.dirname(pyspark.__file__)
    done = subprocess.run(
        [os.path.join(spark_home, "bin", "spark-shell"), "--master", "local[2]", "--packages", treescore.coordinate(),
         "--repositories", MAVEN_REPOSITORY, "--conf", f"spark.jars.ivy={work}/ivy-shell",
         "--conf", "spark.sql.extensions=treescore.TreescoreExtensions", "--conf", "spark.ui.enabled=false"],
        input=SHELL_SCRIPT.format(work=work), capture_output=True, text=True, timeout=600,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_HOME": spark_home})
    assert "BATCHED true" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]
    got = np.array([int(h, 16) for h in (work / "shell-scores.txt").read_text().split()], dtype=np.uint64)
    assert_same_bits(got.view(np.float64), expected)
