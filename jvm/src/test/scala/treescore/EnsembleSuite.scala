package treescore

import org.apache.spark.SparkException
import org.apache.spark.sql.functions.{col, lit, when}

import treescore.ensemble._
import treescore.functions.{score, scoreGrid, scoreGridOver}

/** Ensembles, routes, cascades and grids, natively in one batched pass, against their references. */
class EnsembleSuite extends SparkSuite {

  private lazy val reg = ModelScorer(regressionModel)
  private lazy val bin = ModelScorer(binaryModel)
  private lazy val keyed = fixtureFrame.withColumn("market", when(col("f5") > 0, "DE").otherwise("FR"))

  test("a weighted mean and a weighted sum equal the documented order of operations") {
    val mean = EnsembleScorer(Seq(Member(reg, 0.7), Member(bin, 0.3)))
    val total = EnsembleScorer(Seq(Member(reg, 2.0), Member(bin, -1.0)), Combine.Sum)
    val df = fixtureFrame.select(col("regression"), col("binary"), score(mean).as("m"), score(total).as("s"))
    val rows = df.collect()
    assert(batchOperators(df).length == 1)
    rows.foreach { r =>
      val (a, b) = (r.getDouble(0), r.getDouble(1))
      assert(r.getDouble(2) == (0.7 * a + 0.3 * b) / (0.7 + 0.3))
      assert(r.getDouble(3) == 2.0 * a + -1.0 * b)
    }
  }

  test("min, max and median of weighted members") {
    val members = Seq(Member(reg), Member(bin), Member(reg, 0.5))
    val df = fixtureFrame.select(col("regression"), col("binary"),
      score(EnsembleScorer(members, Combine.Min)).as("lo"), score(EnsembleScorer(members, Combine.Max)).as("hi"),
      score(EnsembleScorer(members, Combine.Median)).as("mid"))
    df.collect().foreach { r =>
      val values = Seq(r.getDouble(0), r.getDouble(1), 0.5 * r.getDouble(0))
      assert(r.getDouble(2) == values.min && r.getDouble(3) == values.max && r.getDouble(4) == values.sorted.apply(1))
    }
  }

  test("routing by key groups rows per model; unknown keys fail by default or score null") {
    val routed = RoutedScorer("market", Seq("DE" -> reg, "FR" -> bin))
    val df = keyed.select(col("market"), col("regression"), col("binary"), score(routed).as("y"))
    val rows = df.collect()
    assert(batchOperators(df).length == 1)
    rows.foreach(r => assert(r.getDouble(3) == (if (r.getString(0) == "DE") r.getDouble(1) else r.getDouble(2))))

    val onlyDE = RoutedScorer("market", Seq("DE" -> reg))
    val e = intercept[SparkException](keyed.select(score(onlyDE)).collect())
    assert(e.getMessage.contains("the route on 'market' has no scorer for key 'FR' and no default"), e.getMessage)

    val nulls = keyed.select(col("market"), score(RoutedScorer("market", Seq("DE" -> reg), None, UnknownKey.Null)).as("y"))
    assert(nulls.schema("y").nullable)
    nulls.collect().foreach(r => assert(r.isNullAt(1) == (r.getString(0) == "FR")))

    val withDefault = keyed.select(col("market"), col("binary"), score(RoutedScorer("market", Seq("DE" -> reg), Some(bin))).as("y"))
    withDefault.collect().filter(_.getString(0) == "FR").foreach(r => assert(r.getDouble(2) == r.getDouble(1)))
  }

  test("a cascade escalates only unconfident rows, and counts them") {
    val cascade = CascadeScorer(bin, reg, acceptBelow = 0.2, acceptAbove = 0.8)
    val df = fixtureFrame.select(col("regression"), col("binary"), score(cascade).as("y"))
    val rows = df.collect()
    var escalated = 0
    rows.foreach { r =>
      val confident = r.getDouble(1) < 0.2 || r.getDouble(1) > 0.8
      if (!confident) escalated += 1
      assert(r.getDouble(2) == (if (confident) r.getDouble(1) else r.getDouble(0)))
    }
    assert(escalated > 0 && escalated < rows.length)
    assert(batchOperators(df).head.metrics("escalatedRows").value == escalated)
  }

  test("a grid equals scoring each grid point separately, with derived inputs and a monotone curve") {
    val values = Seq(-1.0, -0.25, 0.0, 0.5, 2.0)
    val grid = fixtureFrame.select(
      scoreGrid(reg, "f2", values, Map("f3" -> "f3 * (1 - f2)"), "none").as("curve"),
      scoreGrid(reg, "f2", values, Map("f3" -> "f3 * (1 - f2)"), "decreasing").as("down"))
    val pointwise = fixtureFrame.select(values.map { v =>
      score(regressionModel, col("f0"), col("f1"), lit(v), col("f3") * (lit(1) - lit(v)), col("f4"), col("f5"))
    }: _*)
    val curves = grid.collect()
    assert(batchOperators(grid).length == 1)
    curves.zip(pointwise.collect()).foreach { case (g, p) =>
      val curve = g.getSeq[Double](0)
      assert(curve == values.indices.map(p.getDouble))
      assert(g.getSeq[Double](1) == curve.scanLeft(Double.PositiveInfinity)(math.min).tail)
    }
  }

  test("a grid over two inputs is their cross product, curves monotone along the last, on both paths") {
    val (f0s, f2s) = (Seq(-1.0, 0.0, 2.0), Seq(0.5, -0.5))
    val axes = Seq(GridAxis("f0", f0s), GridAxis("f2", f2s))
    def run() = fixtureFrame.select(
      scoreGridOver(reg, axes, Map("f3" -> "f3 + f0 * f2")).as("surface"),
      scoreGridOver(reg, axes, Map("f3" -> "f3 + f0 * f2"), "increasing").as("up")).collect().toSeq
    val pointwise = fixtureFrame.select((for (a <- f0s; b <- f2s) yield {
      score(regressionModel, lit(a), col("f1"), lit(b), col("f3") + lit(a) * lit(b), col("f4"), col("f5"))
    }): _*).collect()
    val surfaces = run()
    surfaces.zip(pointwise).foreach { case (g, p) =>
      val surface = g.getSeq[Double](0)
      assert(surface == (0 until f0s.length * f2s.length).map(p.getDouble))
      assert(g.getSeq[Double](1) == surface.grouped(f2s.length).flatMap(_.scanLeft(Double.NegativeInfinity)(math.max).tail).toSeq)
    }
    assert(withBatchingDisabled(run()) == surfaces)
  }

  test("nesting: a route of ensembles, and a cascade whose full stage is an ensemble, match their parts") {
    val ens = EnsembleScorer(Seq(Member(reg, 0.5), Member(bin, 0.5)))
    val nested = RoutedScorer("market", Seq("DE" -> ens, "FR" -> CascadeScorer(bin, ens, 0.3, 0.7)))
    val df = keyed.select(col("market"), col("regression"), col("binary"), score(nested).as("y"))
    df.collect().foreach { r =>
      val (a, b) = (r.getDouble(1), r.getDouble(2))
      val mean = (0.5 * a + 0.5 * b) / 1.0
      val expected = if (r.getString(0) == "DE") mean else if (b < 0.3 || b > 0.7) b else mean
      assert(r.getDouble(3) == expected)
    }
  }

  test("the batched and row-at-a-time paths agree for a nested grid") {
    val ens = EnsembleScorer(Seq(Member(reg, 0.5), Member(bin, 0.5)), transforms = Seq(OutputTransform.Expm1))
    def run() = keyed.select(scoreGrid(RoutedScorer("market", Seq("DE" -> ens), Some(reg)), "f0",
      Seq(0.0, 1.0, 2.0), Map.empty[String, String], "increasing")).collect().toSeq
    assert(run() == withBatchingDisabled(run()))
  }

  test("row at a time, a task compiles its program once, not once per row, and closes it when the task ends") {
    val grid = scoreGrid(EnsembleScorer(Seq(Member(reg, 0.5), Member(bin, 0.5))), "f0", Seq(0.0, 1.0), Map.empty[String, String], "none")
    val oneTask = fixtureFrame.coalesce(1)
    val (rowAtATime, opened, leftOpen) = countingRowScorers(withBatchingDisabled(oneTask.select(grid).collect().toSeq))
    assert(rowAtATime.length == fixtureRows.length)
    assert(opened == 1, "one program for the one task's rows")
    assert(leftOpen == 0, "the task's end closed it")
    assert(rowAtATime == oneTask.select(grid).collect().toSeq)
  }

  test("contributions: a weighted mean of members, a route and a cascade combine their members' SHAP values") {
    val binRaw = ModelScorer(binaryModel, binaryModel.featureNames, raw = true)
    val ens = EnsembleScorer(Seq(Member(reg, 0.7), Member(binRaw, 0.3)))
    val nested = RoutedScorer("market", Seq("DE" -> ens, "FR" -> CascadeScorer(bin, reg, 0.3, 0.7)))
    val contrib = ScoreOptions(kind = "contrib")
    val features = regressionModel.featureNames.map(col)
    def run() = keyed.select(col("market"), col("binary"), score(regressionModel, contrib, features: _*).as("r"),
      score(binaryModel, contrib, features: _*).as("b"), score(nested, contrib).as("y")).collect().toSeq
    val rows = run()
    rows.foreach { r =>
      val (a, b) = (r.getSeq[Double](2), r.getSeq[Double](3))
      val expected = if (r.getString(0) == "DE") a.zip(b).map { case (x, y) => (0.7 * x + 0.3 * y) / (0.7 + 0.3) }
        else if (r.getDouble(1) < 0.3 || r.getDouble(1) > 0.7) b else a
      assert(r.getSeq[Double](4).map(java.lang.Double.doubleToRawLongBits) == expected.map(java.lang.Double.doubleToRawLongBits))
    }
    assert(rows.map(_.getString(0)).distinct.length == 2)
    assert(run() == withBatchingDisabled(run()))
    val refused = intercept[IllegalArgumentException](score(EnsembleScorer(Seq(Member(reg), Member(bin))), contrib))
    assert(refused.getMessage.contains("objective (binary) transforms the raw score before the ensemble combines it"),
      refused.getMessage)
  }

  test("bad specs are refused with the offending part named") {
    assert(intercept[IllegalArgumentException](EnsembleScorer(Nil)).getMessage ==
      "treescore: an ensemble needs at least one member")
    assert(intercept[IllegalArgumentException](OutputTransform.fromName("log")).getMessage ==
      "treescore: unknown transform 'log'; expected one of identity, exp, expm1, sigmoid, clip")
    assert(intercept[IllegalArgumentException](GridScorer(reg, "price", Seq(1.0))).getMessage.contains(
      "the grid varies 'price', which is not an input of"))
    assert(intercept[IllegalArgumentException](ModelScorer.withColumns(regressionModel, Map("zz" -> "a"), raw = false))
      .getMessage.contains("names zz, which model"))
  }
}
