package treescore

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types.{DoubleType, StructField, StructType}

import treescore.functions.score
import treescore.model.TreeModel

/** Scala-only scoring through treescore.functions.score: no Python anywhere. */
class BatchScoreSuite extends SparkSuite {

  test("the plan scores through BatchScoreExec, and equals lightgbm's predictions bit for bit") {
    val scored = fixtureFrame.withColumn("y", score(regressionModel)).withColumn("p", score(binaryModel))
    val rows = scored.select("regression", "y", "binary", "p").collect()
    assert(batchOperators(scored).length == 1, scored.queryExecution.executedPlan.treeString)
    assert(rows.length == fixtureRows.length)
    assert(bits(rows.map(_.getDouble(1)).toSeq) == bits(rows.map(_.getDouble(0)).toSeq))
    assert(bits(rows.map(_.getDouble(3)).toSeq) == bits(rows.map(_.getDouble(2)).toSeq))
    assert(scored.queryExecution.executedPlan.toString.contains("BatchScore"))
  }

  test("over local rows, the optimizer leaves the scores to BatchScoreExec instead of folding them") {
    val schema = StructType((featureNames ++ Seq("regression", "binary")).map(StructField(_, DoubleType)))
    val local = spark.createDataFrame(fixtureRows.asJava, schema)
    val scored = local.select(col("regression"), score(regressionModel).as("y"))
    val rows = scored.collect().toSeq
    assert(batchOperators(scored).length == 1, scored.queryExecution.executedPlan.treeString)
    assert(rows.length == fixtureRows.length)
    assert(bits(rows.map(_.getDouble(1))) == bits(rows.map(_.getDouble(0))))
  }

  test("under a select, the operator's output keeps only the columns the select reads") {
    val df = fixtureFrame.select(col("regression"), (score(regressionModel) * 2).as("twice"))
    val rows = df.collect()
    val op = batchOperators(df).head
    assert(op.output.map(_.name) == Seq("regression", "treescore_score"), op.output)
    assert(bits(rows.map(_.getDouble(1) / 2).toSeq) == bits(rows.map(_.getDouble(0)).toSeq))
    // withColumn keeps every column, so they all pass through.
    val kept = fixtureFrame.withColumn("y", score(regressionModel))
    assert(batchOperators(kept).head.output.length == fixtureFrame.columns.length + 1)
    val keptRows = kept.collect().toSeq
    assert(bits(keptRows.map(r => r.getDouble(r.length - 1))) == bits(keptRows.map(_.getAs[Double]("regression"))))
  }

  test("the batched operator and the row-at-a-time fallback give identical scores") {
    def run() = {
      val df = fixtureFrame.select(col("regression"), score(regressionModel).as("y"))
      (df.collect().map(_.getDouble(1)).toSeq, batchOperators(df).length)
    }
    val (batched, batchedOps) = run()
    val (fallback, fallbackOps) = withBatchingDisabled(run())
    assert(batchedOps == 1)
    assert(fallbackOps == 0)
    assert(bits(batched) == bits(fallback))
  }

  test("row at a time, a task leases the model and allocates its buffers once, not once per row") {
    val oneTask = fixtureFrame.coalesce(1).select(col("regression"), score(regressionModel).as("y"))
    val (rows, opened, leftOpen) = countingRowScorers(withBatchingDisabled(oneTask.collect().toSeq))
    assert(rows.length == fixtureRows.length)
    assert(opened == 1, "one scorer for the one task's rows")
    assert(leftOpen == 0, "the task's end closed it")
    assert(bits(rows.map(_.getDouble(1))) == bits(rows.map(_.getDouble(0))))
  }

  test("batches smaller than a partition give the same scores, and the metrics count them") {
    spark.conf.set(TreescoreConf.BatchRows.key, "100")
    try {
      val df = fixtureFrame.select(col("regression"), score(regressionModel).as("y"))
      val rows = df.collect()
      assert(bits(rows.map(_.getDouble(1)).toSeq) == bits(rows.map(_.getDouble(0)).toSeq))
      val exec = batchOperators(df).head
      assert(exec.metrics("numOutputRows").value == fixtureRows.length)
      assert(exec.metrics("numBatches").value >= fixtureRows.length / 100)
    } finally spark.conf.unset(TreescoreConf.BatchRows.key)
  }

  test("features may be arbitrary numeric expressions of any numeric type") {
    val features = featureNames.map(n => (col(n) * 1).cast("float"))
    val df = fixtureFrame.select(score(regressionModel, features: _*).as("y"), score(regressionModel, featureNames.map(n => col(n).cast("float").cast("double")): _*).as("z"))
    val rows = df.collect()
    assert(batchOperators(df).length == 1)
    assert(bits(rows.map(_.getDouble(0)).toSeq) == bits(rows.map(_.getDouble(1)).toSeq))
  }

  test("a score inside a larger expression, and the same call twice, are scored once per batch") {
    val y = score(regressionModel)
    val df = fixtureFrame.select(col("regression"), (y * 2 + 1).as("a"), y.as("b"))
    val rows = df.collect()
    val ops = batchOperators(df)
    assert(ops.length == 1 && ops.head.scores.length == 1)
    rows.foreach(r => assert(r.getDouble(1) == r.getDouble(0) * 2 + 1 && r.getDouble(2) == r.getDouble(0)))
  }

  test("the model is loaded once per JVM, however many tasks use it") {
    val df = fixtureFrame.repartition(8).select(score(binaryModel).as("p"))
    df.collect()
    df.collect()
    val loads = batchOperators(df).head.metrics("modelLoadTime").value
    val again = fixtureFrame.repartition(8).select(score(binaryModel).as("p"))
    again.collect()
    assert(batchOperators(again).head.metrics("modelLoadTime").value == 0, s"first run loaded in $loads ns")
  }
}

class ExplainSuite extends SparkSuite {
  test("explain(\"formatted\") shows the operator, its score calls and its metrics") {
    val df = fixtureFrame.select(score(regressionModel).as("y"))
    df.collect()
    val formatted = df.queryExecution.explainString(org.apache.spark.sql.execution.FormattedMode)
    assert(formatted.contains("BatchScore"), formatted)
    assert(formatted.contains("Scores:"), formatted)
    assert(formatted.contains(s"rows scored: ${fixtureRows.length}"), formatted)
    assert(formatted.contains("native scoring time"), formatted)
  }

  test("calls of several models over the same features write one feature matrix; another order writes its own") {
    val reordered = featureNames.reverse.map(col)
    val df = fixtureFrame.select(col("regression"), col("binary"), score(regressionModel).as("y"),
      score(binaryModel).as("p"), score(regressionModel, ScoreOptions(kind = "raw")).as("r"),
      score(binaryModel, reordered: _*).as("q"))
    val rows = df.collect()
    val operator = batchOperators(df).head
    assert(operator.scores.length == 4)
    // y, p and r share one matrix, of the features either model reads; q reads the columns in
    // another order, so it has its own, of the features the binary model reads.
    def reads(model: TreeModel): Set[Int] = featureNames.indices.filter(model.readsFeature).toSet
    val perRow = (reads(regressionModel) ++ reads(binaryModel)).size + reads(binaryModel).size
    assert(operator.metrics("featureValuesWritten").value == perRow.toLong * fixtureRows.length)
    assert(bits(rows.map(_.getDouble(2)).toSeq) == bits(rows.map(_.getDouble(0)).toSeq))
    assert(bits(rows.map(_.getDouble(3)).toSeq) == bits(rows.map(_.getDouble(1)).toSeq))
    assert(bits(rows.map(_.getDouble(4)).toSeq) == bits(rows.map(_.getDouble(0)).toSeq))
  }

  test("features no tree reads are not read from the source, nor written, and a score feeding only them is not made") {
    val unread = featureNames.indices.filterNot(i => regressionModel.readsFeature(i) || binaryModel.readsFeature(i))
    assert(unread.nonEmpty, "the fixture models should leave some feature unread")
    val path = tempDir.resolve("unread-features.parquet").toString
    fixtureFrame.write.mode("overwrite").parquet(path)
    // The binary model's unread last feature is given the regression model's score.
    val df = spark.read.parquet(path).select(col("binary"), col("regression"), score(regressionModel).as("y"),
      score(binaryModel, featureNames.init.map(col) :+ score(regressionModel): _*).as("p"))
    val rows = df.collect()
    val scan = collect(df.queryExecution.executedPlan) { case s: org.apache.spark.sql.execution.FileSourceScanExec => s }.head
    val scanned = scan.output.map(_.name).toSet
    unread.foreach(i => assert(!scanned.contains(featureNames(i)), s"${featureNames(i)} is scanned: ${scan.output}"))
    assert(featureNames.indices.filterNot(unread.contains).forall(i => scanned.contains(featureNames(i))), scan.output)
    val operators = batchOperators(df)
    assert(operators.map(_.scores.length).sum == 2, "one call per model: the inner score fed an unread feature")
    assert(operators.head.metrics("featureValuesWritten").value == (featureNames.length - unread.length).toLong * fixtureRows.length)
    assert(bits(rows.map(_.getDouble(2)).toSeq) == bits(rows.map(_.getDouble(1)).toSeq))
    assert(bits(rows.map(_.getDouble(3)).toSeq) == bits(rows.map(_.getDouble(0)).toSeq))
  }
}
