package treescore

import org.apache.spark.sql.AnalysisException
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types.{ArrayType, DoubleType, IntegerType}

import treescore.functions.score

/** Output kinds and iteration ranges; exactness against lightgbm for these is in tests/ (Python). */
class ScoreKindsSuite extends SparkSuite {

  private def scoresOf(options: ScoreOptions) =
    fixtureFrame.select(score(regressionModel, options).as("s"))

  test("each kind has its type, the batched and fallback paths agree, and raw equals prediction for regression") {
    val expectedTypes = Map("prediction" -> DoubleType, "raw" -> DoubleType,
      "leaf" -> ArrayType(IntegerType, false), "contrib" -> ArrayType(DoubleType, false))
    val results = expectedTypes.map { case (kind, dataType) =>
      val df = scoresOf(ScoreOptions(kind = kind))
      assert(df.schema.head.dataType == dataType, kind)
      val batched = df.collect().map(_.get(0)).toSeq
      assert(batchOperators(df).length == 1)
      val fallback = withBatchingDisabled(scoresOf(ScoreOptions(kind = kind)).collect().map(_.get(0)).toSeq)
      assert(batched == fallback, kind)
      kind -> batched
    }
    assert(results("raw") == results("prediction")) // regression's transform is the identity
    results("leaf").foreach(v => assert(v.asInstanceOf[collection.Seq[Int]].length == regressionModel.numTrees))
    results("contrib").foreach(v => assert(v.asInstanceOf[collection.Seq[Double]].length == regressionModel.numFeatures + 1))
  }

  test("iteration ranges: different ranges in one query each equal their own query") {
    val firstTen = ScoreOptions(numIterations = 10)
    val fromFive = ScoreOptions(startIteration = 5, numIterations = 20)
    val together = fixtureFrame.repartition(4).select(score(regressionModel).as("all"),
      score(regressionModel, firstTen).as("ten"), score(regressionModel, fromFive).as("mid"))
    val rows = together.collect()
    assert(batchOperators(together).head.scores.length == 3)
    val alone = Seq("all" -> ScoreOptions.Default, "ten" -> firstTen, "mid" -> fromFive).map { case (name, options) =>
      name -> fixtureFrame.repartition(4).select(score(regressionModel, options)).collect().map(_.getDouble(0)).toSeq
    }.toMap
    assert(rows.map(_.getDouble(0)).toSeq == alone("all"))
    assert(rows.map(_.getDouble(1)).toSeq == alone("ten"))
    assert(rows.map(_.getDouble(2)).toSeq == alone("mid"))
    assert(alone("ten") != alone("all"))
  }

  test("a start iteration past the model's end is an analysis error") {
    val e = intercept[AnalysisException](scoresOf(ScoreOptions(startIteration = 30)))
    assert(e.getMessage.contains("startIteration 30 is past the model's last iteration (29)"), e.getMessage)
  }

  test("an unknown kind names the choices") {
    val e = intercept[IllegalArgumentException](ScoreOptions(kind = "probability"))
    assert(e.getMessage == "treescore: unknown score kind 'probability'; expected one of prediction, raw, leaf, contrib")
  }
}
