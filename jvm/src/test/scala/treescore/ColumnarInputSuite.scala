package treescore

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.{ColumnarToRowExec, SparkPlan}
import org.apache.spark.sql.functions.{col, lit, when}

import treescore.ensemble.{EnsembleScorer, Member, ModelScorer}
import treescore.execution.{BatchScoreExec, ColumnarBatchScoreExec}
import treescore.functions.{score, scoreGrid}

/** Score calls over columnar sources read the column vectors: same bits as over rows, no ColumnarToRow below. */
class ColumnarInputSuite extends SparkSuite {

  // The fixture with nulls in two features, as a source of the given format.
  private def source(format: String): DataFrame = {
    val path = tempDir.resolve(s"rows-with-nulls.$format").toString
    val withNulls = fixtureFrame
      .withColumn("f1", when(col("f0") > 0.5, lit(null)).otherwise(col("f1")))
      .withColumn("f4", when(col("f2") < -0.5, lit(null)).otherwise(col("f4").cast("float")))
    withNulls.write.mode("overwrite").format(format).save(path)
    spark.read.format(format).load(path)
  }

  private def scored(df: DataFrame): DataFrame = df.select(col("f0"),
    score(regressionModel).as("y"), score(binaryModel).as("p"),
    score(EnsembleScorer(Seq(Member(ModelScorer(regressionModel), 0.7), Member(ModelScorer(binaryModel), 0.3)))).as("e"),
    scoreGrid(regressionModel, "f2", Seq(-1.0, 0.0, 1.5), Map("f3" -> "f3 * (1 - f2)"), "none").as("g"))

  private def columnarInput(plan: SparkPlan): Boolean = {
    val ops = collect(plan) { case c: ColumnarBatchScoreExec => c }
    ops.length == 1 && plan.toString.contains(", columnar input") &&
      collect(ops.head) { case c: ColumnarToRowExec => c }.isEmpty &&
      collect(plan) { case b: BatchScoreExec => b }.isEmpty
  }

  private def rowsOf(df: DataFrame): Seq[String] = df.collect().map(_.toString).toSeq.sorted

  private def withColumnarOff[T](body: => T): T = {
    spark.conf.set(TreescoreConf.ColumnarEnabled.key, "false")
    try body finally spark.conf.unset(TreescoreConf.ColumnarEnabled.key)
  }

  for (format <- Seq("parquet", "orc")) {
    test(s"$format: the columnar path reads the vectors and gives the row path's scores") {
      val df = scored(source(format))
      val columnar = rowsOf(df) // first: with adaptive execution, the plan is final once it ran
      assert(columnarInput(df.queryExecution.executedPlan), df.queryExecution.executedPlan.treeString)
      val rowPath = withColumnarOff {
        val plain = scored(source(format))
        assert(collect(plain.queryExecution.executedPlan) { case b: BatchScoreExec => b }.length == 1)
        rowsOf(plain)
      }
      assert(columnar == rowPath)
      assert(columnar.length == fixtureRows.length)
    }
  }

  // The fixture with 300 columns in all: Spark's own scans return rows above 100 (spark.sql.codegen.maxFields).
  private def wide(df: DataFrame): DataFrame =
    df.select(df.columns.map(col) ++ (0 until 300 - df.columns.length).map(i => (col("f0") * i).as(s"pad$i")): _*)

  for (format <- Seq("parquet", "orc")) {
    test(s"$format with 300 columns is read as columns too") {
      val path = tempDir.resolve(s"wide.$format").toString
      wide(source(format)).write.mode("overwrite").format(format).save(path)
      val df = scored(spark.read.format(format).load(path))
      val columnar = rowsOf(df)
      assert(columnarInput(df.queryExecution.executedPlan), df.queryExecution.executedPlan.treeString)
      assert(columnar == withColumnarOff(rowsOf(scored(spark.read.format(format).load(path)))))
    }
  }

  test("a 300-column cache is read as columns") {
    val cached = wide(source("parquet")).cache()
    try {
      cached.count()
      val df = scored(cached)
      val columnar = rowsOf(df)
      assert(columnarInput(df.queryExecution.executedPlan), df.queryExecution.executedPlan.treeString)
      assert(columnar == withColumnarOff(rowsOf(scored(source("parquet")))))
    } finally cached.unpersist()
  }

  test("the in-memory columnar cache is read in place, and batches larger than batch.rows are sliced") {
    val cached = source("parquet").cache()
    try {
      cached.count()
      spark.conf.set(TreescoreConf.BatchRows.key, "7")
      val df = scored(cached)
      val columnar = rowsOf(df)
      assert(columnarInput(df.queryExecution.executedPlan), df.queryExecution.executedPlan.treeString)
      spark.conf.unset(TreescoreConf.BatchRows.key)
      assert(columnar == withColumnarOff(rowsOf(scored(source("parquet")))))
      assert(batchOperators(df).head.metrics("numBatches").value > 1)
    } finally {
      spark.conf.unset(TreescoreConf.BatchRows.key)
      cached.unpersist()
    }
  }
}
