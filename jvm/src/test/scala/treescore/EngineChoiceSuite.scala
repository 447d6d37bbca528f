package treescore

import org.apache.spark.sql.{AnalysisException, DataFrame}
import org.apache.spark.sql.functions.{col, when}

import treescore.ensemble.{CascadeScorer, EnsembleScorer, Member, ModelScorer, RoutedScorer}
import treescore.execution.TaskScorers
import treescore.functions.score
import treescore.model.Engine

/** spark.treescore.engine: which engine each call gets, where that shows, and that both give the same bits. */
class EngineChoiceSuite extends SparkSuite {

  private def withEngine[T](choice: String)(body: => T): T = {
    spark.conf.set(TreescoreConf.EngineChoice.key, choice)
    try body finally spark.conf.unset(TreescoreConf.EngineChoice.key)
  }

  private def kinds: DataFrame = fixtureFrame.select(col("regression"),
    score(regressionModel).as("p"), score(binaryModel, ScoreOptions(kind = "raw")).as("r"),
    score(binaryModel, ScoreOptions(kind = "leaf")).as("l"), score(regressionModel, ScoreOptions(kind = "contrib")).as("c"))

  /** Every value of every column, doubles as raw bits, so -0.0 and NaN compare exactly. */
  private def exactly(df: DataFrame): Seq[Seq[Any]] = df.collect().toSeq.map(_.toSeq.map {
    case d: Double => java.lang.Double.doubleToRawLongBits(d)
    case s: collection.Seq[_] => s.map { case d: Double => java.lang.Double.doubleToRawLongBits(d); case v => v }
    case v => v
  })

  test("auto gives treescore's engine every kind but contrib, and the plan and metrics say so") {
    withEngine("auto") {
      val df = kinds
      val operator = batchOperators(df).head
      val chosen = operator.scores.map(_.modelKind.name).zip(operator.engines).toMap
      assert(chosen == Map("prediction" -> Engine.Treescore, "raw" -> Engine.Treescore, "leaf" -> Engine.Treescore,
        "contrib" -> Engine.LightGbm))
      df.collect()
      val executed = batchOperators(df).head
      assert(executed.verboseStringWithOperatorId().contains("on the treescore engine"))
      assert(executed.verboseStringWithOperatorId().contains("on the lightgbm engine"))
      val rows = fixtureRows.length.toLong
      assert(executed.metrics(TaskScorers.rowsMetric(Engine.Treescore)).value == 3 * rows)
      assert(executed.metrics(TaskScorers.rowsMetric(Engine.LightGbm)).value == rows)
    }
  }

  test("every kind, batched and row at a time, gives the same bits under both engines") {
    val lightgbm = withEngine("lightgbm")(exactly(kinds))
    val treescore = withEngine("auto")(exactly(kinds))
    val rowAtATime = withEngine("treescore")(withBatchingDisabled(exactly(
      fixtureFrame.select(col("regression"), score(regressionModel).as("p"), score(binaryModel, ScoreOptions(kind = "raw")).as("r"),
        score(binaryModel, ScoreOptions(kind = "leaf")).as("l")))))
    assert(treescore == lightgbm)
    assert(rowAtATime == lightgbm.map(_.take(4)))
    // and both are lightgbm's own predictions, which the fixture file holds
    assert(treescore.map(_(1)) == treescore.map(_(0)))
  }

  test("ensembles, routes and cascades run every member on the chosen engine with the same bits") {
    val ensemble = EnsembleScorer(Seq(Member(ModelScorer(regressionModel), 0.7), Member(ModelScorer(binaryModel), 0.3)))
    val routed = RoutedScorer("market", Seq("DE" -> ModelScorer(regressionModel)), default = Some(ModelScorer(binaryModel)))
    val cascade = CascadeScorer(ModelScorer(binaryModel), ModelScorer(regressionModel), 0.3, 0.7)
    def programs = fixtureFrame.withColumn("market", when(col("f5") > 0, "DE").otherwise("FR"))
      .select(score(ensemble).as("e"), score(routed).as("r"), score(cascade).as("c"))
    val lightgbm = withEngine("lightgbm") {
      assert(batchOperators(programs).head.engines.forall(_ == Engine.LightGbm))
      exactly(programs)
    }
    val treescore = withEngine("treescore") {
      val df = programs
      val result = exactly(df)
      assert(batchOperators(df).head.engines.forall(_ == Engine.Treescore))
      result
    }
    assert(treescore == lightgbm)
  }

  test("engine=treescore refuses contrib at analysis, naming the setting and the reason") {
    withEngine("treescore") {
      val e = intercept[AnalysisException](fixtureFrame.select(score(regressionModel, ScoreOptions(kind = "contrib"))))
      assert(e.getMessage.contains("spark.treescore.engine is 'treescore' but treescore's engine does not compute " +
        "contributions (kind 'contrib'); use 'auto' or 'lightgbm' for this call"), e.getMessage)
    }
  }

  test("a bad engine name is an error that names the key and the choices") {
    val e = intercept[IllegalArgumentException](TreescoreConf.EngineChoice.read(Some("xgboost")))
    assert(e.getMessage == "spark.treescore.engine must be one of auto, treescore, lightgbm, got 'xgboost'")
    assert(Engine.choose("TreeScore", Seq(regressionModel), model.PredictKind.Raw) == Engine.Treescore)
  }
}
