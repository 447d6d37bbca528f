package treescore

import java.nio.charset.StandardCharsets
import java.nio.file.Files

import org.apache.spark.sql.functions.{col, when}

import treescore.ensemble._
import treescore.functions.score

/** Saving and loading scorer specs, and the errors that name the offending part. */
class SpecIOSuite extends SparkSuite {

  private lazy val spec: Scorable = GridScorer(
    RoutedScorer("market", Seq(
      "DE" -> EnsembleScorer(Seq(Member(ModelScorer(regressionModel), 0.6), Member(ModelScorer(binaryModel), 0.4)),
        Combine.Mean, Seq(OutputTransform.Expm1, OutputTransform.Clip(0, Double.PositiveInfinity))),
      "FR" -> CascadeScorer(ModelScorer(binaryModel), ModelScorer(regressionModel), 0.1, 0.9)),
      default = Some(ModelScorer.withColumns(regressionModel, Map("f4" -> "f5"), raw = true))),
    "f0", Seq(-1.0, 0.0, 1.0), Seq("f1" -> "f1 + f0"), Monotone.Increasing)

  private def saved(): String = {
    val dir = tempDir.resolve(s"spec-${System.nanoTime()}").toString
    SpecIO.save(spec, dir, spark.sessionState.newHadoopConf())
    dir
  }

  private def edited(dir: String)(change: String => String): String = {
    val file = java.nio.file.Paths.get(dir, SpecIO.SpecFile)
    Files.write(file, change(new String(Files.readAllBytes(file), StandardCharsets.UTF_8)).getBytes(StandardCharsets.UTF_8))
    dir
  }

  private def problem(dir: String): String = intercept[InvalidSpecException](SpecIO.load(dir, spark.sessionState.newHadoopConf())).getMessage

  test("a nested spec saved and loaded scores exactly as the original") {
    val loaded = SpecIO.load(saved(), spark.sessionState.newHadoopConf())
    assert(loaded == spec)
    val df = fixtureFrame.withColumn("market", when(col("f2") > 0.5, "DE").when(col("f2") < -0.5, "FR").otherwise("IT"))
    assert(df.select(score(loaded)).collect().toSeq == df.select(score(spec)).collect().toSeq)
  }

  test("weights that do not match the members") {
    val dir = edited(saved())(_.replaceFirst("\"weights\" : \\[ 0.6, 0.4 \\]", "\"weights\" : [ 0.6 ]"))
    assert(problem(dir) == "treescore: invalid scorer spec at $.scorer.scorer.routes.DE.weights: 2 members but 1 weights")
  }

  test("an unknown transform") {
    val dir = edited(saved())(_.replaceFirst("\"expm1\"", "\"log1p\""))
    assert(problem(dir).startsWith("treescore: invalid scorer spec at $.scorer.scorer.routes.DE.transforms[0]: unknown transform 'log1p'"))
  }

  test("a missing model file") {
    val dir = saved()
    Files.delete(java.nio.file.Paths.get(dir, "models", s"${binaryModel.contentHash}.txt"))
    assert(problem(dir).contains(s"model file 'models/${binaryModel.contentHash}.txt' is missing"))
  }

  test("a changed model file") {
    val dir = saved()
    val file = java.nio.file.Paths.get(dir, "models", s"${binaryModel.contentHash}.txt")
    Files.write(file, binaryModel.text.replace("pandas_categorical:null", "pandas_categorical:[]").getBytes(StandardCharsets.UTF_8))
    assert(problem(dir).contains("the file was changed or damaged"))
  }

  test("a column mapping naming a feature the model does not have") {
    val dir = edited(saved())(_.replaceFirst("\"f4\" : \"f5\"", "\"price\" : \"f5\""))
    assert(problem(dir).contains("$.scorer.scorer.default: the column mapping names price, which model"), problem(dir))
  }

  test("an unknown scorer type and a grid nested inside") {
    val dir = edited(saved())(_.replaceFirst("\"type\" : \"cascade\"", "\"type\" : \"stack\""))
    assert(problem(dir).contains("$.scorer.scorer.routes.FR.type: unknown type 'stack'"))
  }
}
