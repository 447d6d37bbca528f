package treescore

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.catalyst.util.ArrayData
import org.apache.spark.sql.execution.{ColumnarToRowExec, FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.execution.vectorized.WritableColumnVector
import org.apache.spark.sql.functions.{array, col, lit, when}
import org.apache.spark.sql.types.{ArrayType, DoubleType, IntegerType}
import org.apache.spark.ml.linalg.Vectors

import treescore.ensemble.{CascadeScorer, EnsembleScorer, Member, ModelScorer, RoutedScorer}
import treescore.execution.{BatchScoreExec, BatchScoreNode, ColumnarBatchScoreExec}
import treescore.functions.{score, scoreGrid}
import treescore.model.TreeModel

/**
 * Score calls over columnar sources read the column vectors: the bits of the row path, with no
 * ColumnarToRow below the operator, for Parquet, ORC, the columnar cache and Arrow vectors, at
 * any width, with every input type and construct.
 */
class ColumnarInputSuite extends SparkSuite {

  private val written = scala.collection.mutable.Set.empty[String]

  // The fixture with more nulls in two features (f4 a float), as a source of the given format,
  // written once. With `noNulls`, the other features' nulls are NaN instead (the same missing
  // value, stored); with `fewValues` too, they are rounded to tenths, so that Parquet writes
  // them as dictionary pages.
  private def source(format: String, options: Map[String, String] = Map.empty, noNulls: Boolean = false,
      market: Boolean = true, fewValues: Boolean = false): DataFrame = {
    val path = tempDir.resolve(s"rows-${(options, noNulls, market, fewValues).hashCode}.$format").toString
    if (written.add(path)) write(path, format, options, noNulls, market, fewValues)
    spark.read.format(format).load(path)
  }

  private def write(path: String, format: String, options: Map[String, String], noNulls: Boolean, market: Boolean,
      fewValues: Boolean): Unit = {
    val others = Seq("f0", "f2", "f3", "f5")
    val cleaned = if (!noNulls) fixtureFrame else others.foldLeft(fixtureFrame) { (df, f) =>
      val value = if (fewValues) org.apache.spark.sql.functions.round(col(f), 1) else col(f)
      df.withColumn(f, when(col(f).isNull, lit(Double.NaN)).otherwise(value))
    }
    val withNulls = cleaned
      .withColumn("f1", when(col("f0") > 0.5, lit(null)).otherwise(col("f1")))
      .withColumn("f4", when(col("f2") < -0.5, lit(null)).otherwise(col("f4").cast("float")))
    val keyed = if (market) withNulls.withColumn("market", when(col("f3") > 0, lit("DE")).otherwise(lit("FR"))) else withNulls
    keyed.write.mode("overwrite").options(options).format(format).save(path)
  }

  private lazy val reg = ModelScorer(regressionModel, featureNames)
  private lazy val bin = ModelScorer(binaryModel, featureNames)

  // Every kind of call: models, an ensemble, a route (where the data has its key), a cascade,
  // a grid with a derived input. No tree reads f4 or f5, so f4 (a float) also stands where the
  // regression model reads its fourth feature.
  private def scored(df: DataFrame): DataFrame = df.select(Seq(col("f0"),
    score(regressionModel).as("y"), score(binaryModel).as("p"),
    score(regressionModel, col("f0"), col("f1"), col("f2"), col("f4"), col("f3"), col("f5")).as("y4"),
    score(EnsembleScorer(Seq(Member(reg, 0.7), Member(bin, 0.3)))).as("e"),
    score(CascadeScorer(bin, reg, acceptBelow = 0.2, acceptAbove = 0.8)).as("c"),
    scoreGrid(regressionModel, "f2", Seq(-1.0, 0.0, 1.5), Map("f3" -> "f3 * (1 - f2)"), "none").as("g")) ++
    (if (df.columns.contains("market")) Seq(score(RoutedScorer("market", Seq("DE" -> reg, "FR" -> bin))).as("r")) else Nil): _*)

  private def columnarInput(plan: SparkPlan): Boolean = {
    val ops = collect(plan) { case c: ColumnarBatchScoreExec => c }
    ops.nonEmpty && plan.toString.contains(", columnar input") &&
      ops.forall(op => collect(op) { case c: ColumnarToRowExec => c }.isEmpty) &&
      collect(plan) { case b: BatchScoreExec => b }.isEmpty
  }

  /** Every value of every row, doubles (also inside arrays) as their bits, sorted. */
  private def bitsOf(df: DataFrame): Seq[String] = df.collect().map(_.toSeq.map(asBits).mkString(",")).toSeq.sorted

  private def asBits(value: Any): String = value match {
    case d: Double => java.lang.Long.toHexString(java.lang.Double.doubleToRawLongBits(d))
    case s: scala.collection.Seq[_] => s.map(asBits).mkString("[", " ", "]")
    case other => String.valueOf(other)
  }

  private def withConf[T](settings: (String, String)*)(body: => T): T = {
    settings.foreach { case (k, v) => spark.conf.set(k, v) }
    try body finally settings.foreach { case (k, _) => spark.conf.unset(k) }
  }

  private def withColumnarOff[T](body: => T): T = withConf(TreescoreConf.ColumnarEnabled.key -> "false")(body)

  /** The row path's answer: the same query with the columnar input off. */
  private def rowPath(df: => DataFrame): Seq[String] = withColumnarOff {
    val plain = df
    assert(collect(plain.queryExecution.executedPlan) { case b: BatchScoreExec => b }.nonEmpty)
    bitsOf(plain)
  }

  for (format <- Seq("parquet", "orc")) {
    test(s"$format: the columnar path reads the vectors and gives the row path's bits") {
      val df = scored(source(format))
      val columnar = bitsOf(df) // first: with adaptive execution, the plan is final once it ran
      assert(columnarInput(df.queryExecution.executedPlan), df.queryExecution.executedPlan.treeString)
      assert(columnar == rowPath(scored(source(format))))
      assert(columnar.length == fixtureRows.length)
    }
  }

  test("the columnar path equals lightgbm's own predictions bit for bit") {
    val df = fixtureFrame.select(col("regression"), col("binary"), score(regressionModel).as("y"),
      score(binaryModel).as("p"))
    val rows = withConf(TreescoreConf.BatchRows.key -> "100")(df.collect().toSeq)
    assert(columnarInput(df.queryExecution.executedPlan), df.queryExecution.executedPlan.treeString)
    assert(rows.length == fixtureRows.length)
    assert(bits(rows.map(_.getDouble(2))) == bits(rows.map(_.getDouble(0))))
    assert(bits(rows.map(_.getDouble(3))) == bits(rows.map(_.getDouble(1))))
  }

  // Off-heap vectors of plain-encoded doubles are read in place; on-heap vectors, dictionary
  // pages and columns with nulls are copied. Every way gives the row path's bits.
  for (offHeap <- Seq(true, false); dictionary <- Seq(true, false)) {
    test(s"parquet, off-heap vectors $offHeap, dictionary pages $dictionary: in place only where it can be") {
      val options = Map("parquet.enable.dictionary" -> dictionary.toString)
      def data = source("parquet", options, noNulls = true, fewValues = dictionary)
      withConf("spark.sql.columnVector.offheap.enabled" -> offHeap.toString) {
        val df = data.select(col("f0"), score(regressionModel).as("y"),
          score(EnsembleScorer(Seq(Member(reg, 0.7), Member(bin, 0.3)))).as("e"))
        val columnar = bitsOf(df)
        val op = batchOperators(df).head
        assert(columnarInput(df.queryExecution.executedPlan))
        val inPlace = op.metrics("featureValuesInPlace").value
        val written = op.metrics("featureValuesWritten").value
        // No tree reads f4 or f5: neither is read nor written. f1 has nulls: it is always
        // written; f0, f2 and f3 are read in place exactly where the vectors are off-heap and plain.
        if (offHeap && !dictionary) {
          assert(inPlace == 3L * fixtureRows.length && written == 1L * fixtureRows.length, s"$inPlace in place, $written written")
        } else {
          assert(inPlace == 0 && written == 4L * fixtureRows.length, s"$inPlace in place, $written written")
        }
        assert(columnar == rowPath(data.select(col("f0"), score(regressionModel).as("y"),
          score(EnsembleScorer(Seq(Member(reg, 0.7), Member(bin, 0.3)))).as("e"))))
      }
    }
  }

  test("dictionary-encoded parquet columns reach the operator as dictionary codes, and are decoded") {
    val df = source("parquet", Map("parquet.enable.dictionary" -> "true"), noNulls = true, fewValues = true)
    val scan = collect(df.select(col("f0")).queryExecution.executedPlan) { case s: FileSourceScanExec => s }.head
    val encoded = scan.executeColumnar().mapPartitions(batches => batches.map { b =>
      b.column(0) match { case w: WritableColumnVector => w.hasDictionary; case _ => false }
    }).collect()
    assert(encoded.contains(true), "the fixture's parquet pages should be dictionary-encoded")
  }

  // The fixture with 300 columns in all: Spark's own scans return rows above 100 (spark.sql.codegen.maxFields).
  private def wide(df: DataFrame): DataFrame =
    df.select(df.columns.map(col).toSeq ++ (0 until 300 - df.columns.length).map(i => (col("f0") * i).as(s"pad$i")): _*)

  for (format <- Seq("parquet", "orc")) {
    test(s"$format with 300 columns is read as columns too") {
      val path = tempDir.resolve(s"wide.$format").toString
      wide(source(format)).write.mode("overwrite").format(format).save(path)
      val df = scored(spark.read.format(format).load(path))
      val columnar = bitsOf(df)
      assert(columnarInput(df.queryExecution.executedPlan), df.queryExecution.executedPlan.treeString)
      assert(columnar == rowPath(scored(spark.read.format(format).load(path))))
    }
  }

  test("a 300-column cache is read as columns") {
    // The default cache serializer gives batches only of primitive columns: no route key here.
    val cached = wide(source("parquet", market = false)).cache()
    try {
      cached.count()
      val df = scored(cached)
      val columnar = bitsOf(df)
      assert(columnarInput(df.queryExecution.executedPlan), df.queryExecution.executedPlan.treeString)
      assert(columnar == rowPath(scored(source("parquet", market = false))))
    } finally cached.unpersist()
  }

  test("the in-memory columnar cache is read as columns, and batches larger than batch.rows are sliced") {
    val cached = source("parquet", market = false).cache()
    try {
      cached.count()
      val (columnar, batches) = withConf(TreescoreConf.BatchRows.key -> "7") {
        val df = scored(cached)
        val out = bitsOf(df)
        assert(columnarInput(df.queryExecution.executedPlan), df.queryExecution.executedPlan.treeString)
        (out, batchOperators(df).head.metrics("numBatches").value)
      }
      assert(columnar == rowPath(scored(source("parquet", market = false))))
      assert(batches > fixtureRows.length / 7)
    } finally cached.unpersist()
  }

  test("Arrow-backed vectors are read in place where they hold doubles without nulls") {
    val arrow = spark.read.format(classOf[ArrowTestSource].getName).option("rows", "1000").load()
    val df = arrow.select(col("id"), score(regressionModel).as("y"), score(binaryModel).as("p"))
    val rows = df.collect().sortBy(_.getLong(0))
    assert(columnarInput(df.queryExecution.executedPlan), df.queryExecution.executedPlan.treeString)
    val op = batchOperators(df).head
    // f0, f2, f3 in place; f1 (nulls) written; f4 and f5, which no tree reads, neither.
    assert(op.metrics("featureValuesInPlace").value == 3L * 1000, op.metrics)
    assert(op.metrics("featureValuesWritten").value == 1L * 1000, op.metrics)
    // The same rows as a plain local DataFrame, scored row by row.
    val expected = spark.createDataFrame(spark.sparkContext.parallelize((0L until 1000L).map { id =>
      Row.fromSeq(id +: (0 to 5).map(f => ArrowTestSource.value(id, f).map[Any](v => if (f == 4) v.toFloat else v).orNull))
    }, 2), ArrowTestSource.schema).select(col("id"), score(regressionModel).as("y"), score(binaryModel).as("p"))
      .collect().sortBy(_.getLong(0))
    assert(rows.length == 1000)
    assert(bits(rows.map(_.getDouble(1)).toSeq) == bits(expected.map(_.getDouble(1)).toSeq))
    assert(bits(rows.map(_.getDouble(2)).toSeq) == bits(expected.map(_.getDouble(2)).toSeq))
  }

  test("vector and array feature columns are read from columnar batches too") {
    val path = tempDir.resolve("nested.parquet").toString
    val toVector = org.apache.spark.sql.functions.udf((values: Seq[java.lang.Double]) =>
      Vectors.dense(values.map(v => if (v == null) Double.NaN else v.doubleValue()).toArray))
    source("parquet").select(col("f0"), array(featureNames.map(col): _*).as("features"))
      .withColumn("vector", toVector(col("features"))).write.mode("overwrite").parquet(path)
    def query = spark.read.parquet(path).select(col("f0"), score(regressionModel, col("features")).as("a"),
      score(regressionModel, col("vector")).as("v"))
    val df = query
    val columnar = bitsOf(df)
    assert(columnarInput(df.queryExecution.executedPlan), df.queryExecution.executedPlan.treeString)
    assert(columnar == rowPath(query))
  }

  test("a parent that reads columns gets the scores as column vectors: a score over another score") {
    // The binary model reads the regression model's score as its fourth feature (one it splits on).
    def query = source("parquet").select(col("f0"),
      score(binaryModel, col("f0"), col("f1"), col("f2"), score(regressionModel), col("f4"), col("f5")).as("p"))
    val df = query
    val columnar = bitsOf(df)
    val plan = df.queryExecution.executedPlan
    val ops = collect(plan) { case c: ColumnarBatchScoreExec => c }
    assert(ops.length == 2, plan.treeString)
    assert(columnarInput(plan), plan.treeString)
    assert(columnar == rowPath(query))
    // The inner operator's own columnar output, read directly: the scores of its row output.
    val inner = ops.find(op => collect(op.child) { case c: ColumnarBatchScoreExec => c }.isEmpty).get
    val viaColumns = inner.executeColumnar().mapPartitions(_.flatMap { batch =>
      (0 until batch.numRows).map(i => java.lang.Double.doubleToRawLongBits(batch.column(batch.numCols - 1).getDouble(i)))
    }).collect().sorted.toSeq
    val viaRows = inner.execute().map(r => java.lang.Double.doubleToRawLongBits(r.getDouble(r.numFields - 1))).collect().sorted.toSeq
    assert(viaColumns == viaRows && viaColumns.length == fixtureRows.length)
  }

  test("grid and leaf results are array vectors in columnar output") {
    val df = source("parquet").select(col("f0"),
      scoreGrid(regressionModel, "f2", Seq(-1.0, 0.0, 1.5), Map.empty[String, String], "none").as("g"),
      score(regressionModel, ScoreOptions(kind = "leaf")).as("leaves"))
    df.collect()
    val op = collect(df.queryExecution.executedPlan) { case c: ColumnarBatchScoreExec => c }.head
    // The operator's output: f0, then its results in its own order.
    val g = op.output.indexWhere(_.dataType == ArrayType(DoubleType, false))
    val leaves = op.output.indexWhere(_.dataType == ArrayType(IntegerType, false))
    assert(g >= 0 && leaves >= 0, op.output)
    val viaColumns = op.executeColumnar().mapPartitions(_.flatMap { batch =>
      (0 until batch.numRows).map(i => (batch.column(g).getArray(i).toDoubleArray().toSeq.map(java.lang.Double.doubleToRawLongBits),
        batch.column(leaves).getArray(i).toIntArray().toSeq))
    }).collect().toSeq.sortBy(_.toString)
    val viaRows = op.execute().map { r =>
      val grid: ArrayData = r.getArray(g)
      (grid.toDoubleArray().toSeq.map(java.lang.Double.doubleToRawLongBits), r.getArray(leaves).toIntArray().toSeq)
    }.collect().toSeq.sortBy(_.toString)
    assert(viaColumns == viaRows && viaColumns.length == fixtureRows.length)
  }
}
