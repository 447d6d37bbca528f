package treescore

import java.nio.file.Files

import org.apache.spark.ml.{Pipeline, PipelineModel, PipelineStage}
import org.apache.spark.ml.feature.VectorAssembler
import org.apache.spark.sql.{Column, DataFrame}
import org.apache.spark.sql.functions.{col, when}
import org.apache.spark.sql.types.{ArrayType, DoubleType, IntegerType, StringType}

import treescore.ensemble._
import treescore.functions.{score, scoreGrid}
import treescore.ml.ScoreTransformer

/** The Spark ML stage: same scores as `score`, persistence alone and inside a Pipeline, schema errors. */
class ScoreTransformerSuite extends SparkSuite {

  private lazy val reg = ModelScorer(regressionModel)
  private lazy val bin = ModelScorer(binaryModel)
  private lazy val keyed = fixtureFrame.withColumn("id", org.apache.spark.sql.functions.monotonically_increasing_id())
    .withColumn("market", when(col("f5") > 0, "DE").otherwise("FR")).cache()
  private lazy val ensemble = EnsembleScorer(Seq(Member(reg, 0.7), Member(bin, 0.3)), transforms = Seq(OutputTransform.Sigmoid))
  private lazy val routed = RoutedScorer("market", Seq("DE" -> reg, "FR" -> ensemble))
  private lazy val cascade = CascadeScorer(bin, reg, acceptBelow = 0.2, acceptAbove = 0.8)
  private lazy val gridValues = Seq(-1.0, 0.0, 0.5, 2.0)
  private lazy val grid = GridScorer(reg, "f2", gridValues, Seq("f3" -> "f3 * (1 - f2)"), Monotone.Increasing)

  private def assembler = new VectorAssembler().setInputCols(featureNames.toArray).setOutputCol("features")
    .setHandleInvalid("keep") // nulls become NaN, LightGBM's missing value, as score reads them

  /** The rows of `df`, ordered by id, as comparable values (doubles by their bits). */
  private def values(df: DataFrame, column: String): Seq[Any] =
    df.orderBy("id").select(column).collect().toSeq.map(_.get(0) match {
      case d: Double => java.lang.Double.doubleToRawLongBits(d)
      case s: scala.collection.Seq[_] => s.map {
        case d: Double => java.lang.Double.doubleToRawLongBits(d)
        case other => other
      }
      case null => null
      case other => other
    })

  private def expected(column: Column): Seq[Any] = values(keyed.withColumn("expected", column), "expected")

  test("a model stage reading columns by name, by inputCols or from a vector equals score and lightgbm") {
    val byName = new ScoreTransformer(regressionModel).setOutputCol("p")
    val byList = new ScoreTransformer(regressionModel).setInputCols(featureNames.toArray).setOutputCol("p")
    val byVector = new ScoreTransformer(regressionModel).setFeaturesCol("features").setOutputCol("p")
    val fromScore = expected(score(regressionModel))
    assert(fromScore == values(keyed, "regression"))
    assert(values(byName.transform(keyed), "p") == fromScore)
    assert(values(byList.transform(keyed), "p") == fromScore)
    assert(values(byVector.transform(assembler.transform(keyed)), "p") == fromScore)
  }

  test("kind and iterations select the model output, typed as score types it") {
    val cols = featureNames.map(col)
    Seq(ScoreOptions("raw"), ScoreOptions("leaf"), ScoreOptions("contrib"), ScoreOptions(startIteration = 2, numIterations = 5))
      .foreach { o =>
        val stage = new ScoreTransformer(binaryModel).setKind(o.kind).setStartIteration(o.startIteration)
          .setNumIterations(o.numIterations).setOutputCol("out")
        val out = stage.transform(keyed)
        assert(stage.transformSchema(keyed.schema)("out").dataType == o.predictKind.dataType(1))
        assert(values(out, "out") == expected(score(binaryModel, o, cols: _*)), o)
      }
    assert(new ScoreTransformer(binaryModel).setKind("leaf").transformSchema(keyed.schema)("score").dataType ==
      ArrayType(IntegerType, false))
  }

  test("ensembles, routes, cascades and grids as stages equal score") {
    Seq[Scorable](ensemble, routed, cascade, grid).foreach { s =>
      val out = new ScoreTransformer(s).setOutputCol("y").transform(keyed)
      assert(values(out, "y") == expected(score(s)), s.describe)
    }
    val curve = new ScoreTransformer(grid).transformSchema(keyed.schema)("score").dataType
    assert(curve == ArrayType(DoubleType, false) || curve == ArrayType(DoubleType, true))
    assert(values(new ScoreTransformer(grid).transform(keyed), "score") ==
      expected(scoreGrid(reg, "f2", gridValues, Map("f3" -> "f3 * (1 - f2)"), "increasing")))
  }

  test("a saved Pipeline with VectorAssembler and every kind of scorer loads and scores the same") {
    val stages = Array[PipelineStage](assembler,
      new ScoreTransformer(regressionModel).setFeaturesCol("features").setOutputCol("model"),
      new ScoreTransformer(binaryModel).setKind("contrib").setOutputCol("shap"),
      new ScoreTransformer(ensemble).setOutputCol("ensemble"), new ScoreTransformer(routed).setOutputCol("route"),
      new ScoreTransformer(cascade).setOutputCol("cascade"), new ScoreTransformer(grid).setOutputCol("grid"))
    val fitted = new Pipeline().setStages(stages).fit(keyed)
    val path = tempDir.resolve("pipeline").toString
    fitted.write.save(path)
    val loaded = PipelineModel.load(path)
    val outputs = Seq("model", "shap", "ensemble", "route", "cascade", "grid")
    val (before, after) = (fitted.transform(keyed), loaded.transform(keyed))
    outputs.foreach(c => assert(values(after, c) == values(before, c), c))
    assert(values(after, "model") == values(keyed, "regression"))
    assert(loaded.stages(1).asInstanceOf[ScoreTransformer].getFeaturesCol == "features")
    assert(loaded.stages(2).asInstanceOf[ScoreTransformer].getKind == "contrib")
    assert(loaded.stages(1).uid == stages(1).uid)
    // The unfitted Pipeline round-trips too, and refits to the same stages.
    new Pipeline().setStages(stages).write.save(tempDir.resolve("unfitted").toString)
    val refit = Pipeline.load(tempDir.resolve("unfitted").toString).fit(keyed)
    assert(values(refit.transform(keyed), "route") == values(before, "route"))
  }

  test("a saved stage is Spark's metadata plus the model file or spec folder; overwrite replaces it") {
    val path = tempDir.resolve("stage").toString
    new ScoreTransformer(regressionModel).setOutputCol("p").write.save(path)
    val modelFiles = tempDir.resolve("stage/model").toFile.list().toSeq
    assert(modelFiles == Seq(s"${regressionModel.contentHash}.txt"))
    assert(intercept[java.io.IOException](new ScoreTransformer(routed).write.save(path)).getMessage.contains("already exists"))
    new ScoreTransformer(routed).setOutputCol("r").write.overwrite().save(path)
    assert(Files.exists(tempDir.resolve("stage/scorer/spec.json")) && !Files.exists(tempDir.resolve("stage/model")))
    val loaded = ScoreTransformer.load(path)
    assert(loaded.getOutputCol == "r" && loaded.describe == routed.describe)
    assert(values(loaded.transform(keyed), "r") == expected(score(routed)))
  }

  test("a changed model file fails the load, naming the file") {
    val path = tempDir.resolve("damaged")
    new ScoreTransformer(regressionModel).write.save(path.toString)
    val file = path.resolve(s"model/${regressionModel.contentHash}.txt")
    // One digit of the first leaf value changed: still a valid model, but a different one.
    val text = Files.readString(file)
    val digit = (text.indexOf("leaf_value=") until text.length).find(i => text(i) >= '1' && text(i) <= '9').get
    Files.writeString(file, text.updated(digit, if (text(digit) == '9') '1' else (text(digit) + 1).toChar))
    val e = intercept[Exception](ScoreTransformer.load(path.toString))
    assert(e.getMessage.contains(regressionModel.contentHash) && e.getMessage.contains("changed or damaged"), e.getMessage)
    val empty = tempDir.resolve("not-a-stage")
    new ScoreTransformer(regressionModel).write.save(empty.toString)
    org.apache.commons.io.FileUtils.deleteDirectory(empty.resolve("model").toFile)
    assert(intercept[java.io.FileNotFoundException](ScoreTransformer.load(empty.toString)).getMessage
      .contains("neither a model/ nor a scorer/ folder"))
  }

  test("schema problems fail in transformSchema with messages naming the column or param") {
    def problem(stage: ScoreTransformer, df: DataFrame = keyed): String =
      intercept[IllegalArgumentException](stage.transformSchema(df.schema)).getMessage
    assert(problem(new ScoreTransformer(regressionModel).setInputCols(Array("f0", "nope", "f2", "f3", "f4", "f5")))
      .contains("input column 'nope' not found"))
    assert(problem(new ScoreTransformer(routed), keyed.drop("market")).contains("input column 'market' not found"))
    assert(problem(new ScoreTransformer(regressionModel).setOutputCol("f0")).contains("output column 'f0' already exists"))
    assert(problem(new ScoreTransformer(regressionModel).setFeaturesCol("f0").setInputCols(Array("f1")))
      .contains("either featuresCol or inputCols"))
    val wrongType = problem(new ScoreTransformer(regressionModel), keyed.withColumn("f3", col("f3").cast(StringType)))
    assert(wrongType.contains("given for feature 'f3' has type string"), wrongType)
    val wrongSize = problem(new ScoreTransformer(regressionModel).setFeaturesCol("features"),
      new VectorAssembler().setInputCols(Array("f0", "f1")).setOutputCol("features").transform(keyed))
    assert(wrongSize.contains("holds 2 features but the model expects 6"), wrongSize)
    val modelOnly = problem(new ScoreTransformer(ensemble).setFeaturesCol("features").setKind("leaf"))
    assert(modelOnly.contains("featuresCol, kind apply to a single model only"), modelOnly)
    assert(intercept[IllegalArgumentException](new ScoreTransformer(regressionModel).setKind("proba"))
      .getMessage.contains("kind"))
    // transform checks the same way before any job runs.
    assert(intercept[IllegalArgumentException](new ScoreTransformer(routed).transform(keyed.drop("market")))
      .getMessage.contains("'market'"))
  }

  test("copy keeps the scorer and the params") {
    val stage = new ScoreTransformer(cascade).setOutputCol("c")
    val copied = stage.copy(org.apache.spark.ml.param.ParamMap(stage.outputCol -> "d"))
    assert(copied.uid == stage.uid && copied.getOutputCol == "d" && copied.describe == cascade.describe)
    assert(values(copied.transform(keyed), "d") == expected(score(cascade)))
  }
}
