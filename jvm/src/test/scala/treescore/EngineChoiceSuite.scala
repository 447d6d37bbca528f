package treescore

import org.apache.spark.sql.{AnalysisException, DataFrame}
import org.apache.spark.sql.functions.{col, when}

import treescore.ensemble.{CascadeScorer, EnsembleScorer, Member, ModelScorer, RoutedScorer}
import treescore.execution.TaskScorers
import treescore.functions.score
import treescore.model.{Engine, TreeModel, TreeShapTables}
import treescore.wire.WireLimits

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

  /** The regression fixture without its training counts, which TreeSHAP weighs paths by (and without
   * tree_sizes, which counted their lines). */
  private lazy val uncounted = TreeModel.fromString(regressionModel.text.linesIterator
    .filterNot(l => Seq("leaf_count=", "internal_count=", "tree_sizes=").exists(l.startsWith)).mkString("\n") + "\n")

  private def contributions(models: TreeModel*): DataFrame =
    fixtureFrame.select(models.zipWithIndex.map { case (m, i) => score(m, ScoreOptions(kind = "contrib")).as(s"c$i") }: _*)

  test("auto gives treescore's engine every kind, and the plan and metrics say so, with its layout") {
    withEngine("auto") {
      val df = kinds
      val operator = batchOperators(df).head
      assert(operator.engines.forall(_ == Engine.Treescore))
      df.collect()
      val executed = batchOperators(df).head
      val plan = executed.verboseStringWithOperatorId()
      // The fixtures' trees fit 32-bit leaf sets (tests/test_engine_fuzz.py holds the names to the engine's choice).
      val narrow = WireLimits.QuickScorerNarrowLeaves
      assert(Seq(regressionModel, binaryModel).forall(_.mostLeaves <= narrow))
      assert(plan.contains(s"on the treescore engine (quickscorer, $narrow-bit leaf sets)"), plan)
      assert(plan.contains("on the treescore engine (TreeSHAP)"), plan)
      assert(!plan.contains("on the lightgbm engine"))
      assert(executed.metrics(TaskScorers.rowsMetric(Engine.Treescore)).value == 4L * fixtureRows.length)
    }
  }

  test("auto gives LightGBM the contributions treescore's engine cannot compute") {
    withEngine("auto") {
      val df = contributions(regressionModel, uncounted)
      val operator = batchOperators(df).head
      assert(operator.scores.map(_.models.head).zip(operator.engines).toMap ==
        Map(regressionModel -> Engine.Treescore, uncounted -> Engine.LightGbm))
      df.collect()
      assert(batchOperators(df).head.metrics(TaskScorers.rowsMetric(Engine.LightGbm)).value == fixtureRows.length)
    }
  }

  test("the driver counts a deep chain's TreeSHAP tables and replayed leaves") {
    val deep = new TreeShapTables.Builder
    val depth = WireLimits.TreeShapMaxTableDepth.toInt + 1
    // A chain: node i sends one side to leaf i and the other on to node i + 1; its last node ends in two leaves.
    val left = Array.tabulate(depth)(i => ~i)
    val right = Array.tabulate(depth)(i => if (i == depth - 1) ~depth else i + 1)
    deep.addTree(left, right, Array.tabulate(depth)(i => i % 3), counted = true)
    val tables = deep.result
    // Leaves at depth d <= 12 read min(d, 3) features, and both leaves at depth 13 read 3: work e^2 + d.
    val tabledWork = (1 until depth).map(d => math.min(d, 3) * math.min(d, 3) + d).sum
    val addends = (1 until depth).map(d => (1L << d) * math.min(d, 3)).sum
    assert(tables.copy(replayedShare = 0, candidates = TreeShapTables.Candidates.Empty) ==
      TreeShapTables(hasCounts = true, leaves = depth + 1, replayedLeaves = 2, 0, tableAddends = addends))
    // Under a smaller budget the largest table goes first, then the next: smallest tables first.
    val largest = (1L << (depth - 1)) * 3
    assert(tables.within(addends - 1).tableAddends == addends - largest && tables.within(addends - 1).replayedLeaves == 3)
    assert(tables.within(addends - largest - 1).replayedLeaves == 4)
    assert(tables.within(0).replayedLeaves == depth + 1 && tables.within(0).replayedShare == 1.0)
    assert(math.abs(tables.replayedShare - 2.0 * (9 + depth) / (tabledWork + 2 * (9 + depth))) < 1e-12)
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

  test("engine=treescore computes contributions, and refuses a model without counts naming the setting and why") {
    val lightgbm = withEngine("lightgbm")(exactly(contributions(regressionModel)))
    withEngine("treescore") {
      val df = contributions(regressionModel)
      assert(batchOperators(df).head.engines == Seq(Engine.Treescore))
      assert(exactly(df) == lightgbm)
      val e = intercept[AnalysisException](contributions(uncounted))
      assert(e.getMessage.contains("spark.treescore.engine is 'treescore' but treescore's engine computes " +
        s"contributions from the training counts (leaf_count, internal_count), and model " +
        s"${uncounted.contentHash.take(12)} has none; use 'auto' or 'lightgbm' for this call"), e.getMessage)
    }
  }

  test("auto gives a model with linear trees treescore's engine, with LightGBM's bits; no choice gives contributions") {
    val source = scala.io.Source.fromResource("fixtures/linear.txt")
    val linear = TreeModel.fromString(try source.mkString finally source.close())
    assert(linear.hasLinearTrees)
    def scores = fixtureFrame.select(score(linear).as("p"), score(linear, ScoreOptions(kind = "raw")).as("r"))
    val lightgbm = withEngine("lightgbm")(exactly(scores))
    withEngine("auto") {
      assert(batchOperators(scores).head.engines == Seq(Engine.Treescore, Engine.Treescore))
      assert(exactly(scores) == lightgbm)
    }
    for (choice <- Seq("auto", "treescore", "lightgbm")) withEngine(choice) {
      val e = intercept[AnalysisException](contributions(linear))
      assert(e.getMessage.contains(s"model ${linear.contentHash.take(12)} has linear trees, for which LightGBM " +
        "defines no contributions (SHAP values)"), e.getMessage)
    }
  }

  test("a bad engine name is an error that names the key and the choices") {
    val e = intercept[IllegalArgumentException](TreescoreConf.EngineChoice.read(Some("xgboost")))
    assert(e.getMessage == "spark.treescore.engine must be one of auto, treescore, lightgbm, got 'xgboost'")
    assert(Engine.choose("TreeScore", Seq(regressionModel), model.PredictKind.Raw) == Engine.Treescore)
  }
}
