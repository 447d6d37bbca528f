"""The Python API: Model construction, score() argument forms, configure(), and clear errors."""
import os
import re

import numpy as np
import pyspark
import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import treescore
from conftest import FEATURE_NAMES, assert_same_bits, collect, feature_frame, plan_of

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def frame(spark, tmp_path_factory):
    return feature_frame(spark, tmp_path_factory.mktemp("api"), 5_000, seed=21)


def test_model_metadata(spark, regression_booster):
    model = treescore.Model.from_booster(regression_booster)
    assert model.feature_names == FEATURE_NAMES
    assert model.num_features == len(FEATURE_NAMES)
    assert model.num_classes == 1
    assert re.fullmatch("[0-9a-f]{64}", model.content_hash)


def test_model_engine_follows_the_setting_and_the_kind(spark, regression_booster):
    model = treescore.Model.from_booster(regression_booster)
    assert spark.conf.get("spark.treescore.engine", "auto") == "auto"
    uncounted = treescore.Model.from_string("\n".join(
        line for line in regression_booster.model_to_string().splitlines()
        if not line.startswith(("leaf_count=", "internal_count=", "tree_sizes="))))
    assert [model.engine(k) for k in ("prediction", "raw", "leaf", "contrib")] == ["treescore"] * 4
    assert uncounted.engine("contrib") == "lightgbm"
    spark.conf.set("spark.treescore.engine", "lightgbm")
    try:
        assert model.engine() == "lightgbm"
        spark.conf.set("spark.treescore.engine", "treescore")
        assert model.engine("contrib") == "treescore"
        with pytest.raises(ValueError, match="from the training counts .leaf_count, internal_count., and model "
                                             f"{uncounted.content_hash[:12]} has none"):
            uncounted.engine("contrib")
        spark.conf.set("spark.treescore.engine", "fastest")
        with pytest.raises(ValueError, match="spark.treescore.engine must be one of auto, treescore, lightgbm"):
            model.engine()
    finally:
        spark.conf.unset("spark.treescore.engine")


def test_load_from_file_equals_from_booster(spark, frame, regression_booster, tmp_path):
    df, x = frame
    path = str(tmp_path / "model.txt")
    regression_booster.save_model(path)
    loaded = treescore.Model.load(path)
    assert loaded.feature_names == FEATURE_NAMES
    assert_same_bits(collect(df.withColumn("y", treescore.score(loaded)), "y"), regression_booster.predict(x))


def test_columns_as_names_expressions_or_a_list(spark, frame, regression_booster):
    df, x = frame
    model = treescore.Model.from_booster(regression_booster)
    expected = regression_booster.predict(x)
    by_name = df.withColumn("y", treescore.score(model, *FEATURE_NAMES))
    by_expression = df.withColumn("y", treescore.score(model, *[F.col(n) * 1.0 for n in FEATURE_NAMES]))
    as_list = df.withColumn("y", treescore.score(model, FEATURE_NAMES))
    for scored in (by_name, by_expression, as_list):
        assert "BatchScore" in plan_of(scored)
        assert_same_bits(collect(scored, "y"), expected)


def test_features_of_narrower_numeric_types(spark, frame, regression_booster):
    df, x = frame
    model = treescore.Model.from_booster(regression_booster)
    as_float = df.select("id", *[F.col(n).cast("float").alias(n) for n in FEATURE_NAMES])
    expected = regression_booster.predict(x.astype(np.float32))
    assert_same_bits(collect(as_float.withColumn("y", treescore.score(model)), "y"), expected)


def test_two_models_in_one_select_share_one_operator(spark, frame, regression_booster, binary_booster):
    df, x = frame
    reg = treescore.Model.from_booster(regression_booster)
    binary = treescore.Model.from_booster(binary_booster)
    scored = df.select("id", (0.7 * treescore.score(reg) + 0.3 * treescore.score(binary)).alias("y"))
    assert plan_of(scored).count("BatchScore [") == 1
    expected = 0.7 * regression_booster.predict(x) + 0.3 * binary_booster.predict(x)
    assert_same_bits(collect(scored, "y"), expected)


def test_wrong_number_of_columns_is_a_clear_analysis_error(spark, frame, regression_booster):
    df, _ = frame
    model = treescore.Model.from_booster(regression_booster)
    with pytest.raises(AnalysisException) as error:
        df.withColumn("y", treescore.score(model, "x0", "x1"))
    assert "the model expects 8 feature columns (x0, x1, x2, x3, x4, x5, x6, x7) but 2 were given" in str(error.value)


def test_non_numeric_column_is_a_clear_analysis_error(spark, frame, regression_booster):
    df, _ = frame
    model = treescore.Model.from_booster(regression_booster)
    with_text = df.withColumn("x3", F.lit("not a number"))
    with pytest.raises(AnalysisException) as error:
        with_text.withColumn("y", treescore.score(model))
    assert "given for feature 'x3' has type string; expected a numeric or boolean column" in str(error.value)


def test_missing_model_file_names_the_path(spark, tmp_path):
    missing = str(tmp_path / "nowhere" / "model.txt")
    with pytest.raises(FileNotFoundError) as error:
        treescore.Model.load(missing)
    assert str(error.value) == f"treescore: no model file at '{missing}'"


def test_an_expected_checksum_catches_a_silently_changed_model(spark, regression_booster, tmp_path):
    path = tmp_path / "model.txt"
    regression_booster.save_model(str(path))
    good = treescore.Model.load(str(path))
    assert treescore.Model.load(str(path), sha256=good.content_hash).content_hash == good.content_hash
    text = path.read_text()
    position = text.index("leaf_value=") + len("leaf_value=") + 3
    while not text[position].isdigit():
        position += 1
    changed = text[:position] + ("7" if text[position] != "7" else "3") + text[position + 1:]
    path.write_text(changed)
    treescore.Model.load(str(path))  # still a valid model: only the checksum can tell
    with pytest.raises(treescore.InvalidModelError, match="its SHA-256 is .* but .* was expected"):
        treescore.Model.load(str(path), sha256=good.content_hash)


def test_truncated_model_is_rejected_before_lightgbm_sees_it(spark, regression_booster):
    text = regression_booster.model_to_string()
    with pytest.raises(treescore.InvalidModelError) as error:
        treescore.Model.from_string(text[: len(text) // 2])
    assert "not a valid LightGBM text model" in str(error.value)


def test_configure_keeps_existing_jars_extensions_and_plugins():
    builder = (SparkSession.builder.config("spark.jars", "/opt/other.jar").config("spark.sql.extensions", "a.B")
               .config("spark.plugins", "c.D"))
    treescore.configure(builder)
    assert builder._options["spark.jars"] == f"/opt/other.jar,{treescore.jar_path()}"
    assert builder._options["spark.sql.extensions"] == "a.B,treescore.TreescoreExtensions"
    assert builder._options["spark.plugins"] == "c.D,treescore.TreescorePlugin"
    treescore.configure(builder)  # idempotent
    assert builder._options["spark.jars"].count(treescore.jar_path()) == 1
    assert builder._options["spark.plugins"].count("treescore.TreescorePlugin") == 1


def test_the_wheel_carries_a_jar_for_every_supported_spark_line():
    with open(os.path.join(ROOT, "build", "spark-lines.txt")) as f:
        listed = [line.split()[0] for line in f if line.strip() and not line.startswith("#")]
    assert treescore.jars.supported_lines() == listed
    for line in listed:
        assert os.path.basename(treescore.jar_path(f"{line}.2")) == f"treescore-spark-{line}.jar"
        assert os.path.isfile(treescore.jar_path(f"{line}.0"))


def test_the_jar_matches_the_running_pyspark():
    line = ".".join(pyspark.__version__.split(".")[:2])
    assert treescore.jar_path().endswith(f"treescore-spark-{line}.jar")


@pytest.mark.parametrize("version", ["3.4.4", "4.4.0", "5.0.0"])
def test_an_unsupported_spark_gets_an_error_naming_the_supported_lines(version):
    with pytest.raises(RuntimeError, match=rf"Spark {re.escape(version)} is not supported; .* supports Spark 3\.5\.x, "
                                           r"4\.0\.x, 4\.1\.x, 4\.2\.x, 4\.3\.x"):
        treescore.jar_path(version)


def test_one_lightgbm_version_everywhere():
    import lightgbm

    with open(os.path.join(ROOT, "native", "LIGHTGBM_VERSION")) as f:
        pinned = f.read().strip()
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        pyproject_pins = set(re.findall(r'"lightgbm==([^"]+)"', f.read()))
    assert pyproject_pins == {pinned}
    assert lightgbm.__version__ == pinned


def _class_file_majors(jar: str) -> set:
    import zipfile

    with zipfile.ZipFile(jar) as archive:
        return {int.from_bytes(archive.read(n)[6:8], "big") for n in archive.namelist() if n.endswith(".class")}


def test_the_spark_3_5_jar_runs_on_java_8_and_the_4_x_jars_need_java_17():
    """Managed Spark 3.5 runtimes still run Java 8: that jar must be Java 8 bytecode (class file
    version 52); -release 8 also kept Java 9+ library calls out of it at compile time."""
    assert _class_file_majors(treescore.jar_path("3.5.7")) == {52}
    for line in treescore.jars.supported_lines():
        if not line.startswith("3."):
            assert _class_file_majors(treescore.jar_path(f"{line}.0")) == {61}, line
