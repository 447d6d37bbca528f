package treescore

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.execution.columnar.InMemoryTableScanExec
import org.apache.spark.sql.functions.{array, avg, col, count, expm1, lit, sum, when}

import treescore.functions.score

/** Every place a score can stand in a query goes through the batched operator, exactly. */
class ScorePlacesSuite extends SparkSuite {

  private def both(build: => DataFrame): (Seq[Row], Seq[Row], Int) = {
    val batched = build
    val rows = batched.collect().toSeq
    val ops = batchOperators(batched).length
    val fallback = withBatchingDisabled {
      val df = build
      assert(batchOperators(df).isEmpty)
      df.collect().toSeq
    }
    (rows, fallback, ops)
  }

  test("inside larger expressions: expm1(0.7 * a + 0.3 * b) is one batched pass") {
    val (rows, fallback, ops) = both(fixtureFrame.select(
      col("regression"), col("binary"), expm1(lit(0.7) * score(regressionModel) + lit(0.3) * score(binaryModel)).as("y")))
    assert(ops == 1)
    assert(rows == fallback)
    rows.foreach(r => assert(r.getDouble(2) == math.expm1(0.7 * r.getDouble(0) + 0.3 * r.getDouble(1))))
  }

  test("in a filter") {
    val (rows, fallback, ops) = both(fixtureFrame.where(score(regressionModel) > 0).select("regression"))
    assert(ops == 1)
    assert(rows == fallback)
    assert(rows.length == fixtureRows.count(_.getDouble(6) > 0))
    assert(rows.forall(_.getDouble(0) > 0))
  }

  test("inside aggregates") {
    val (rows, fallback, ops) = both(fixtureFrame.agg(
      avg(score(regressionModel)).as("a"), sum(score(binaryModel)).as("s"), avg("regression"), sum("binary")))
    assert(ops == 1)
    assert(rows == fallback)
    assert(rows.head.getDouble(0) == rows.head.getDouble(2) && rows.head.getDouble(1) == rows.head.getDouble(3))
  }

  test("grouped by a score") {
    val (rows, fallback, ops) = both(fixtureFrame.groupBy((score(binaryModel) > 0.5).as("positive"))
      .agg(count(lit(1)).as("n")).orderBy("positive"))
    assert(ops == 1)
    assert(rows == fallback)
    assert(rows.map(_.getLong(1)).sum == fixtureRows.length)
  }

  test("in chains of withColumn, the second reading the first") {
    val (rows, fallback, ops) = both(fixtureFrame
      .withColumn("a", score(regressionModel))
      .withColumn("b", score(binaryModel))
      .withColumn("c", col("a") + col("b"))
      .select("regression", "binary", "a", "b", "c"))
    assert(ops == 1)
    assert(rows == fallback)
    rows.foreach(r => assert(r.getDouble(2) == r.getDouble(0) && r.getDouble(3) == r.getDouble(1)))
  }

  test("a score of a score is batched in two layers") {
    val features = score(regressionModel) +: featureNames.tail.map(col)
    val (rows, fallback, ops) = both(fixtureFrame.select(score(regressionModel, features: _*).as("y")))
    assert(ops == 2)
    assert(rows == fallback)
  }

  test("on either side of a join") {
    val left = fixtureFrame.withColumn("id", col("f0")).where(col("f0").isNotNull)
      .select(col("id"), score(regressionModel).as("y"), col("regression"))
    val right = fixtureFrame.where(col("f0").isNotNull)
      .select(col("f0").as("id"), score(binaryModel).as("p"), col("binary"))
    val (rows, fallback, ops) = both(left.join(right, "id").select("y", "regression", "p", "binary"))
    assert(ops == 2)
    assert(rows.toSet == fallback.toSet)
    rows.foreach(r => assert(r.getDouble(0) == r.getDouble(1) && r.getDouble(2) == r.getDouble(3)))
  }

  test("in a join condition on one side's score") {
    val left = fixtureFrame.select(col("f0").as("k"), col("regression"))
    val right = fixtureFrame.select(col("f0"), col("f1"), col("f2"), col("f3"), col("f4"), col("f5"))
    val (rows, fallback, ops) = both(left.join(right, col("k") === col("f0") && score(regressionModel) > 0)
      .select("regression"))
    assert(ops == 1)
    assert(rows.toSet == fallback.toSet)
    assert(rows.forall(_.getDouble(0) > 0))
  }

  test("with AQE on and off") {
    Seq("true", "false").foreach { aqe =>
      spark.conf.set("spark.sql.adaptive.enabled", aqe)
      try {
        val (rows, fallback, ops) = both(fixtureFrame.repartition(5).select(col("regression"), score(regressionModel).as("y")))
        assert(ops == 1, s"AQE $aqe")
        // As sets: the batched plan shuffles fewer columns (none that no tree reads), so the
        // round-robin repartition deals the rows out in another order.
        assert(rows.sortBy(_.getDouble(0)) == fallback.sortBy(_.getDouble(0)))
        rows.foreach(r => assert(r.getDouble(0) == r.getDouble(1)))
      } finally spark.conf.unset("spark.sql.adaptive.enabled")
    }
  }

  test("on cached DataFrames, in the cached plan and over a cached input") {
    val cachedScores = fixtureFrame.select(col("regression"), score(regressionModel).as("y")).cache()
    try {
      val rows = cachedScores.collect()
      rows.foreach(r => assert(r.getDouble(0) == r.getDouble(1)))
      val scans = collect(cachedScores.queryExecution.executedPlan) { case s: InMemoryTableScanExec => s }
      assert(scans.nonEmpty)
      assert(scans.exists(s => collect(s.relation.cachedPlan) { case b: execution.BatchScoreNode => b }.nonEmpty))
    } finally cachedScores.unpersist()

    val cachedInput = fixtureFrame.cache()
    try {
      val scored = cachedInput.select(col("binary"), score(binaryModel).as("p"))
      val rows = scored.collect()
      assert(batchOperators(scored).length == 1)
      rows.foreach(r => assert(r.getDouble(0) == r.getDouble(1)))
    } finally cachedInput.unpersist()
  }

  test("features as one array column, with nulls as missing values") {
    val scored = fixtureFrame.select(col("regression"), score(regressionModel, array(featureNames.map(col): _*)).as("y"))
    val rows = scored.collect()
    assert(batchOperators(scored).length == 1)
    rows.foreach(r => assert(r.getDouble(0) == r.getDouble(1)))
    val asFloats = fixtureFrame.select(score(regressionModel, array(featureNames.map(n => col(n).cast("float")): _*)).as("a"),
      score(regressionModel, featureNames.map(n => col(n).cast("float")): _*).as("b"))
    asFloats.collect().foreach(r => assert(r.getDouble(0) == r.getDouble(1)))
  }

  test("features as one ML vector column, dense or sparse") {
    import org.apache.spark.ml.linalg.{SQLDataTypes, Vectors}
    import org.apache.spark.sql.types.{StructField, StructType}
    val rows = Seq(
      Row(Vectors.dense(0.5, -1.0, 0.0, 2.0, 0.0, 1.5)),
      Row(Vectors.sparse(6, Array(0, 1, 3, 5), Array(0.5, -1.0, 2.0, 1.5))),
      Row(Vectors.dense(Double.NaN, 0, 0, 0, 0, 0)))
    val vectors = spark.createDataFrame(spark.sparkContext.parallelize(rows, 2),
      StructType(Seq(StructField("features", SQLDataTypes.VectorType))))
    val scored = vectors.select(score(regressionModel, col("features")).as("v"))
    val dense = vectors.select(score(regressionModel,
      org.apache.spark.ml.functions.vector_to_array(col("features"))).as("a"))
    val byVector = scored.collect().map(_.getDouble(0))
    assert(batchOperators(scored).length == 1)
    assert(bits(byVector.toSeq) == bits(dense.collect().map(_.getDouble(0)).toSeq))
    assert(byVector(0) == byVector(1), "the sparse vector holds the same values as the dense one")
  }
}
