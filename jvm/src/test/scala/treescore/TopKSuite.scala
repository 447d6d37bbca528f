package treescore

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.expressions.Window
import org.apache.spark.sql.functions.{col, dense_rank, desc, lit, rank, row_number, when}

import treescore.ensemble.{CascadeScorer, Combine, EnsembleScorer, Member, ModelScorer, OutputTransform, RoutedScorer,
  UnknownKey}
import treescore.execution.TopKBoard
import treescore.functions.score

/**
 * Top-K selection on every Spark line: which plans InferTopKSelection marks (a LIMIT over a sort
 * by a score, rank()/row_number() <= k over a window ordered by one), which it leaves alone, and
 * that marked plans give the rows and bits of the same query unmarked. Python's test_top_k.py
 * checks far more shapes against lightgbm.
 */
class TopKSuite extends SparkSuite {

  private def selection(df: DataFrame): Option[rules.TopKSelection] = batchOperators(df).flatMap(_.topK).headOption

  private def unselected[T](body: => T): T = {
    spark.conf.set(TreescoreConf.TopKEnabled.key, "false")
    try body finally spark.conf.unset(TreescoreConf.TopKEnabled.key)
  }

  private def scored: DataFrame =
    fixtureFrame.select(col("regression"), col("f0"), score(regressionModel).as("s"))

  test("ORDER BY score DESC LIMIT k is selected, with the rows and bits of a full sort") {
    def query() = scored.orderBy(desc("s")).limit(3)
    val rows = query().collect().map(r => (r.getDouble(0), r.getDouble(2))).toSeq
    val chosen = selection(query())
    assert(chosen.exists(s => s.k == 3 && s.descending && s.groupBy.isEmpty), query().queryExecution.executedPlan)
    val full = unselected(query().collect().map(r => (r.getDouble(0), r.getDouble(2))).toSeq)
    assert(unselected(selection(query())).isEmpty)
    assert(rows.map(_._1) == full.map(_._1))
    assert(bits(rows.map(_._2)) == bits(full.map(_._2)))
    assert(bits(rows.map(_._2)) == bits(rows.map(_._1))) // the fixture's regression column is lightgbm's prediction
    assert(selection(scored.orderBy(col("s").asc).limit(2)).exists(s => !s.descending && s.k == 2))
  }

  test("rank() and row_number() <= k per group are selected; dense_rank and other shapes are not") {
    val byF0 = Window.partitionBy(col("f0") > 0).orderBy(desc("s"))
    val ranked = scored.withColumn("r", rank().over(byF0)).where(col("r") <= 2)
    assert(selection(ranked).exists(s => s.k == 2 && s.groupBy.nonEmpty), ranked.queryExecution.executedPlan)
    assert(selection(scored.withColumn("r", row_number().over(byF0)).where(col("r") < 3)).exists(_.k == 2))
    assert(selection(scored.withColumn("r", dense_rank().over(byF0)).where(col("r") <= 2)).isEmpty)
    assert(selection(scored.where(col("f0") > 0).orderBy(desc("s")).limit(2)).nonEmpty) // pushed below the score
    assert(selection(scored.withColumn("t", col("s") * 2).orderBy(desc("t")).limit(2)).isEmpty)
    val rows = ranked.collect().map(r => (r.getDouble(0), r.getDouble(2))).sortBy(_._1).toSeq
    val full = unselected(ranked.collect().map(r => (r.getDouble(0), r.getDouble(2))).sortBy(_._1).toSeq)
    assert(rows == full && bits(rows.map(_._2)) == bits(full.map(_._2)))
  }

  test("an ensemble of models and ensembles, weights 0 or more, is selected, with the rows and bits of a full sort") {
    val (reg, bin) = (ModelScorer(regressionModel), ModelScorer(binaryModel))
    val expm1Mean = EnsembleScorer(Seq(Member(reg, 0.7), Member(bin, 0.3), Member(bin, 0.0)), Combine.Mean,
      Seq(OutputTransform.Expm1))
    val median = EnsembleScorer(Seq(Member(reg), Member(bin, 2.0), Member(reg, 0.5)), Combine.Median)
    val nested = EnsembleScorer(Seq(Member(expm1Mean, 0.5), Member(median, 0.25), Member(bin)), Combine.Sum)
    for (ensemble <- Seq(expm1Mean, median, nested); descending <- Seq(true, false)) {
      def query() = {
        val s = fixtureFrame.select(col("regression"), col("binary"), score(ensemble).as("s"))
        s.orderBy(if (descending) desc("s") else col("s").asc).limit(7)
      }
      assert(selection(query()).exists(s => s.k == 7 && s.descending == descending), query().queryExecution.executedPlan)
      val rows = query().collect().map(r => (r.getDouble(0), r.getDouble(2))).toSeq
      val full = unselected(query().collect().map(r => (r.getDouble(0), r.getDouble(2))).toSeq)
      // The scores in order, bit for bit; the rows too, but for those tying with the 7th (either may come first).
      assert(bits(rows.map(_._2)) == bits(full.map(_._2)), s"$ensemble $descending")
      val last = full.last._2
      assert(rows.filter(_._2 != last).toSet == full.filter(_._2 != last).toSet, s"$ensemble $descending")
    }
    val negative = EnsembleScorer(Seq(Member(reg, 2.0), Member(bin, -1.0)), Combine.Sum)
    assert(selection(fixtureFrame.select(score(negative).as("s")).orderBy(desc("s")).limit(3)).isEmpty)
    val negativeInside = EnsembleScorer(Seq(Member(negative), Member(reg)))
    assert(selection(fixtureFrame.select(score(negativeInside).as("s")).orderBy(desc("s")).limit(3)).isEmpty)
    val cascade = CascadeScorer(bin, reg, 0.2, 0.8)
    val withCascade = EnsembleScorer(Seq(Member(reg), Member(cascade)))
    assert(selection(fixtureFrame.select(score(withCascade).as("s")).orderBy(desc("s")).limit(3)).isEmpty)
  }

  test("a route to models and ensembles is selected, with the rows, bits and nulls of a full sort") {
    val (reg, bin) = (ModelScorer(regressionModel), ModelScorer(binaryModel))
    val frame = fixtureFrame.withColumn("market", when(col("f1") > 0, lit("DE")).when(col("f1") < -0.5, lit("FR"))
      .otherwise(lit("IT")))
    assert(frame.where(col("market") === "IT").count() > 7, "rows the partial route scores null")
    val blend = EnsembleScorer(Seq(Member(reg, 0.5), Member(bin, 0.5)), Combine.Sum)
    val routed = RoutedScorer("market", Seq("DE" -> reg, "FR" -> blend), Some(bin))
    val partial = RoutedScorer("market", Seq("DE" -> reg, "FR" -> bin), None, UnknownKey.Null)
    val inEnsemble = EnsembleScorer(Seq(Member(routed, 0.7), Member(reg, 0.3)), Combine.Max)
    for (scorer <- Seq(routed, partial, inEnsemble); descending <- Seq(true, false)) {
      def query() = frame.select(col("regression"), score(scorer).as("s"))
        .orderBy(if (descending) desc("s") else col("s").asc).limit(7)
      def collected(df: DataFrame) = df.collect().map(r => (r.getDouble(0), Option(r.get(1)).map(_.asInstanceOf[Double])))
        .toSeq
      assert(selection(query()).exists(s => s.k == 7 && s.descending == descending), query().queryExecution.executedPlan)
      val rows = collected(query())
      val full = unselected(collected(query()))
      assert(rows.map(_._2.map(java.lang.Double.doubleToRawLongBits)) == full.map(_._2.map(java.lang.Double.doubleToRawLongBits)),
        s"$scorer $descending")
      val last = full.last._2
      assert(rows.filter(_._2 != last).toSet == full.filter(_._2 != last).toSet, s"$scorer $descending")
      // Ascending puts nulls first: the partial route's top 7 are rows it scores null.
      if (scorer == partial && !descending) assert(rows.forall(_._2.isEmpty))
    }
    val toCascade = RoutedScorer("market", Seq("DE" -> reg), Some(CascadeScorer(bin, reg, 0.2, 0.8)))
    assert(selection(frame.select(score(toCascade).as("s")).orderBy(desc("s")).limit(3)).isEmpty)
  }

  test("a partition's floor is the k-th best key of the other partitions' published keys") {
    val board = new TopKBoard(3)
    assert(board.floor(0) == Double.NegativeInfinity)
    board.publish(1, Array(5.0, 4.0))
    assert(board.floor(0) == Double.NegativeInfinity, "fewer than k keys: no floor")
    board.publish(2, Array(9.0, 1.0, Double.NaN))
    assert(board.floor(0) == 4.0)
    assert(board.floor(1) == Double.NegativeInfinity, "a partition never counts its own keys")
    board.publish(1, Array(7.0, 6.0, 5.0)) // computed again: its keys are replaced, not added
    assert(board.floor(2) == 5.0 && board.floor(0) == 6.0)
    val cached = board.floorFor(0)
    assert(cached() == 6.0)
    board.publish(3, Array(8.0))
    assert(cached() == 7.0, "a publication refreshes the floor")
  }
}
