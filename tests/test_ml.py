"""treescore.ml.ScoreTransformer: Pipelines saved and loaded in Python and in the JVM score
exactly as lightgbm.Booster.predict does."""
import os
import subprocess
import sys

import numpy as np
import pytest
from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.feature import VectorAssembler
from pyspark.sql import functions as F

import treescore
from conftest import FEATURE_NAMES, assert_same_bits, collect, feature_frame, train
from treescore.ml import ScoreTransformer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKETS = np.array(["DE", "FR", "IT"])


@pytest.fixture(scope="module")
def boosters():
    return [train("regression", rounds=15, seed=s) for s in (1, 2)] + [train("binary", rounds=15, seed=4)]


@pytest.fixture(scope="module")
def data(spark, tmp_path_factory):
    df, x = feature_frame(spark, tmp_path_factory.mktemp("ml"), 3_000, seed=71)
    df = df.withColumn("market", F.element_at(F.array(*[F.lit(m) for m in MARKETS]), (F.col("id") % 3 + 1).cast("int")))
    return df, x, MARKETS[np.arange(len(x)) % 3]


def assembler():
    # The features hold NaN (missing) values, which VectorAssembler refuses unless told to keep them.
    return VectorAssembler(inputCols=FEATURE_NAMES, outputCol="features", handleInvalid="keep")


def test_model_stage_after_vector_assembler_round_trips_through_a_saved_pipeline(spark, data, boosters, tmp_path):
    df, x, _ = data
    model = treescore.Model.from_booster(boosters[0])
    pipeline = Pipeline(stages=[assembler(), ScoreTransformer(model, featuresCol="features", outputCol="p")])
    fitted = pipeline.fit(df)
    path = str(tmp_path / "pipeline")
    fitted.write().save(path)
    loaded = PipelineModel.load(path)
    stage = loaded.stages[1]
    assert isinstance(stage, ScoreTransformer)
    assert stage.getFeaturesCol() == "features" and stage.getOutputCol() == "p"
    assert stage.describe() == f"model({model.content_hash[:12]})"
    expected = boosters[0].predict(x)
    assert_same_bits(collect(fitted.transform(df), "p"), expected)
    assert_same_bits(collect(loaded.transform(df), "p"), expected)
    # The unfitted Pipeline saves and loads as well.
    pipeline.write().save(str(tmp_path / "unfitted"))
    refit = Pipeline.load(str(tmp_path / "unfitted")).fit(df)
    assert_same_bits(collect(refit.transform(df), "p"), expected)


def test_model_stage_by_column_names_with_kind_and_iterations(spark, data, boosters, tmp_path):
    df, x, _ = data
    model = treescore.Model.from_booster(boosters[2])
    stages = [ScoreTransformer(model, outputCol="p"),
              ScoreTransformer(model, inputCols=FEATURE_NAMES, kind="contrib", outputCol="shap"),
              ScoreTransformer(model, kind="raw", startIteration=2, numIterations=5, outputCol="raw")]
    path = str(tmp_path / "kinds")
    Pipeline(stages=stages).fit(df).write().save(path)
    scored = PipelineModel.load(path).transform(df)
    assert_same_bits(collect(scored, "p"), boosters[2].predict(x))
    assert_same_bits(collect(scored, "shap"), boosters[2].predict(x, pred_contrib=True))
    assert_same_bits(collect(scored, "raw"), boosters[2].predict(x, raw_score=True, start_iteration=2,
                                                                      num_iteration=5))


def test_ensemble_route_cascade_and_grid_stages_round_trip(spark, data, boosters, tmp_path):
    df, x, markets = data
    reg1, reg2, binary = (treescore.Model.from_booster(b) for b in boosters)
    values = [0.0, 0.5, 1.0]
    stages = [ScoreTransformer(treescore.Ensemble([reg1, reg2], weights=[0.25, 0.75], combine="sum"), outputCol="ens"),
              ScoreTransformer(treescore.Routed("market", {"DE": reg1, "FR": reg2}, default=binary), outputCol="route"),
              ScoreTransformer(treescore.Cascade(binary, reg1, 0.25, 0.75), outputCol="cascade"),
              ScoreTransformer(treescore.Grid(reg2, vary={"x2": values}), outputCol="grid")]
    path = str(tmp_path / "scorers")
    Pipeline(stages=stages).fit(df).write().save(path)
    scored = PipelineModel.load(path).transform(df)

    p = [b.predict(x) for b in boosters]
    assert_same_bits(collect(scored, "ens"), np.array([0.25 * a + 0.75 * b for a, b in zip(p[0], p[1])]))
    assert_same_bits(collect(scored, "route"), np.where(markets == "DE", p[0], np.where(markets == "FR", p[1], p[2])))
    assert_same_bits(collect(scored, "cascade"), np.where((p[2] < 0.25) | (p[2] > 0.75), p[2], p[0]))
    points = []
    for v in values:
        point = x.copy()
        point[:, 2] = v
        points.append(boosters[1].predict(point))
    assert_same_bits(collect(scored, "grid"), np.column_stack(points))


def test_python_saves_and_the_jvm_loads_and_the_other_way_round(spark, data, boosters, tmp_path):
    df, x, _ = data
    model = treescore.Model.from_booster(boosters[0])
    expected = boosters[0].predict(x)
    jvm = spark._jvm

    python_saved = str(tmp_path / "from-python")
    Pipeline(stages=[assembler(), ScoreTransformer(model, featuresCol="features", outputCol="p")]) \
        .fit(df).write().save(python_saved)
    java_pipeline = jvm.org.apache.spark.ml.PipelineModel.load(python_saved)
    assert java_pipeline.stages()[1].getClass().getName() == "treescore.ml.ScoreTransformer"
    from pyspark.sql import DataFrame
    java_scored = DataFrame(java_pipeline.transform(df._jdf), spark)
    assert_same_bits(collect(java_scored, "p"), expected)

    jvm_saved = str(tmp_path / "from-jvm")
    java_stage = jvm.treescore.ml.ScoreTransformer(treescore.Routed("market", {"DE": model}, default=model)._java())
    java_stage.setOutputCol("r").write().save(jvm_saved)
    loaded = ScoreTransformer.load(jvm_saved)
    assert loaded.getOutputCol() == "r" and loaded.uid == java_stage.uid()
    assert_same_bits(collect(loaded.transform(df), "r"), expected)


def test_bad_stages_fail_with_messages_naming_the_column(spark, data, boosters):
    df, _, _ = data
    model = treescore.Model.from_booster(boosters[0])
    with pytest.raises(ValueError, match="input column 'x3' not found"):
        ScoreTransformer(model).transform(df.drop("x3"))
    with pytest.raises(ValueError, match="input column 'market' not found"):
        ScoreTransformer(treescore.Routed("market", {"DE": model})).transform(df.drop("market"))
    with pytest.raises(ValueError, match="featuresCol apply to a single model only"):
        ScoreTransformer(treescore.Ensemble([model]), featuresCol="features").transform(df)
    with pytest.raises(ValueError, match="output column 'x0' already exists"):
        ScoreTransformer(model, outputCol="x0").transform(df)
    with pytest.raises(ValueError, match="unknown score kind 'proba'"):
        ScoreTransformer(model, kind="proba")
    with pytest.raises(TypeError, match="got str"):
        ScoreTransformer("/models/churn.txt")
    with pytest.raises(ValueError, match="has no model or scorer"):
        ScoreTransformer(outputCol="p").transform(df)


@pytest.mark.slow
def test_the_ml_pipeline_example_runs_and_matches_lightgbm():
    done = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "ml_pipeline.py"), "3000"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the loaded pipeline scores equal the saved one and lightgbm for all 3,000 rows" in done.stdout
