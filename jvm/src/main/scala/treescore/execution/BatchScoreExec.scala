package treescore.execution

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet}
import org.apache.spark.sql.execution.{ColumnarToRowTransition, ExplainUtils, SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.vectorized.ColumnarBatch

import treescore.TreescoreConf
import treescore.expressions.BatchableScore
import treescore.model.{Engine, EngineLayout}
import treescore.nativelib.CacheBudget
import treescore.rules.TopKSelection

/**
 * A batched score operator: scores its child's rows in batches of up to batch.rows scores,
 * their features written into one off-heap matrix per distinct feature list (calls of several
 * models over the same columns share one), each model called once per batch through JNI, and
 * the scores joined back onto the rows (as Spark's EvalPythonExec does). `engines(k)` evaluates
 * the trees of `scores(k)`; the plan string shows them. Two operators differ in their input:
 * [[BatchScoreExec]] reads rows, [[ColumnarBatchScoreExec]] reads column vectors.
 */
trait BatchScoreNode extends UnaryExecNode {
  def scores: Seq[BatchableScore]
  def engines: Seq[Engine]
  /** The child's columns the output keeps, before the results. */
  def passThrough: Seq[Attribute]
  def resultAttrs: Seq[Attribute]
  /** A top-K query above, whose rows out of reach of the top this operator leaves out. */
  def topK: Option[TopKSelection]

  override def output: Seq[Attribute] = passThrough ++ resultAttrs
  override def producedAttributes: AttributeSet = AttributeSet(resultAttrs)

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "rows scored"),
    "numBatches" -> SQLMetrics.createMetric(sparkContext, "batches"),
    "inputTime" -> SQLMetrics.createNanoTimingMetric(sparkContext, "input time (the child's rows or batches)"),
    "featureWriteTime" -> SQLMetrics.createNanoTimingMetric(sparkContext, "feature write time"),
    "nativeTime" -> SQLMetrics.createNanoTimingMetric(sparkContext, "native scoring time"),
    "modelLoadTime" -> SQLMetrics.createNanoTimingMetric(sparkContext, "model load time"),
    "nativePeakBytes" -> SQLMetrics.createSizeMetric(sparkContext, "peak native memory of the executor while a task scored"),
    "escalatedRows" -> SQLMetrics.createMetric(sparkContext, "rows escalated by cascades"),
    "topKRowsDropped" -> SQLMetrics.createMetric(sparkContext, "rows top-K selection dropped"),
    "topKTreesEvaluated" -> SQLMetrics.createMetric(sparkContext, "trees top-K selection evaluated"),
    "topKTreesInFull" -> SQLMetrics.createMetric(sparkContext, "trees a full score of the same rows evaluates"),
    "featureValuesWritten" -> SQLMetrics.createMetric(sparkContext, "feature values written for models"),
    "featureValuesInPlace" -> SQLMetrics.createMetric(sparkContext, "feature values models read in place"),
    TaskScorers.rowsMetric(Engine.Treescore) -> SQLMetrics.createMetric(sparkContext, "rows scored by treescore's engine"),
    TaskScorers.rowsMetric(Engine.LightGbm) -> SQLMetrics.createMetric(sparkContext, "rows scored by LightGBM"))

  /** What every task runs, built on the driver: large models are shipped as broadcasts first. */
  protected def scoring(): BatchScoring = {
    val broadcastThreshold = TreescoreConf.BroadcastThresholdBytes.from(conf)
    scores.flatMap(_.models).distinct.foreach(_.shipIfLarge(sparkContext, broadcastThreshold))
    // batch.rows bounds the scores per batch, so a grid's batch has fewer rows and the same memory;
    // batch.maxBytes bounds the buffers and top-K's working memory, so wide calls get fewer rows, not more memory.
    val byScores = TreescoreConf.BatchRows.from(conf) / scores.map(_.pointsPerRow).max
    val doublesPerRow = scores.flatMap(_.sharedFeatures).toMap.values.map(_.toLong).sum +
      scores.map(_.ownDoublesPerRow).sum + topK.map(s => TopKScorer.doublesPerRow(scores(s.score))).getOrElse(0L)
    val byBytes = TreescoreConf.BatchMaxBytes.from(conf) / (8 * math.max(1L, doublesPerRow))
    val batchRows = math.max(1L, math.min(byScores.toLong, byBytes)).toInt
    val nativeThreads = TreescoreConf.NativeThreads.from(conf)
    CallThreads.warning(nativeThreads, CacheBudget.threadsPerTask(sparkContext.getConf)).foreach(logWarning(_))
    BatchScoring(scores, engines, child.output, passThrough, resultAttrs, batchRows, nativeThreads, metrics, topK)
  }

  /** How the input arrives, as the plan shows it after the result columns: "" for rows. */
  protected def inputPath: String

  // One name for both operators, so the Spark UI and tools that look for BatchScore find either.
  override def nodeName: String = "BatchScore"

  private def onEngines: Seq[String] = scores.indices.map { k =>
    val layout = if (engines(k) == Engine.Treescore) s" (${EngineLayout.describe(scores(k).models, scores(k).modelKind)})" else ""
    s"${scores(k)} on the ${engines(k)} engine$layout"
  }

  /** explain() shows the input path, each call with its engine (and that engine's layout), then the result columns. */
  override def simpleString(maxFields: Int): String =
    s"$nodeName ${onEngines.mkString("[", ", ", "]")}, ${resultAttrs.mkString("[", ", ", "]")}$inputPath" +
      selection.map(", " + _).getOrElse("")

  /** The top-K selection as plans show it, naming the selected score's column. */
  private def selection: Option[String] = topK.map(s => s.describe(resultAttrs(s.score).toString))

  /** explain("formatted") lists the score calls and, once the plan has run, its metrics. */
  override def verboseStringWithOperatorId(): String = {
    val listed = scores.indices.map(k => s"${resultAttrs(k)} = ${onEngines(k)}").mkString("\n  ", "\n  ", "")
    val measured = metrics.toSeq.sortBy(_._1).map { case (_, m) => s"${m.name.getOrElse("")}: ${m.value}" }
    s"""$formattedNodeName
       |${ExplainUtils.generateFieldString("Input", child.output)}
       |Input path: ${if (inputPath.isEmpty) "rows" else "column vectors"}
       |Scores:$listed
       |Top-K selection: ${selection.getOrElse("none")}
       |Metrics: ${measured.mkString(", ")}
       |""".stripMargin
  }
}

/** The batched score operator over rows; each row is copied once into its batch. */
case class BatchScoreExec(scores: Seq[BatchableScore], engines: Seq[Engine], passThrough: Seq[Attribute],
    resultAttrs: Seq[Attribute], child: SparkPlan, topK: Option[TopKSelection] = None) extends BatchScoreNode {
  override protected def inputPath: String = ""

  override protected def doExecute(): RDD[InternalRow] = {
    val plan = scoring()
    child.execute().mapPartitions(rows => plan.scorePartition(plan.rowBatches(rows)), preservesPartitioning = true)
  }

  override protected def withNewChildInternal(newChild: SparkPlan): BatchScoreExec = copy(child = newChild)
}

/**
 * The batched score operator over a child that produces columnar batches (the vectorized
 * Parquet and ORC readers, the in-memory columnar cache, any scan producing column vectors). Features are
 * read out of the column vectors a column at a time, and no input row is built or copied to
 * read them. A parent that reads rows gets each row built once, with its scores; a parent that
 * reads columns gets the child's vectors with one vector per score appended. It stands where
 * Spark would put its ColumnarToRowExec, as a ColumnarToRowTransition, so Spark keeps the child
 * columnar; [[treescore.rules.ColumnarScoreInput]] plans it.
 */
case class ColumnarBatchScoreExec(scores: Seq[BatchableScore], engines: Seq[Engine], passThrough: Seq[Attribute],
    resultAttrs: Seq[Attribute], child: SparkPlan, topK: Option[TopKSelection] = None)
  extends BatchScoreNode with ColumnarToRowTransition {
  override protected def inputPath: String = ", columnar input"

  // A top-K selection drops rows, which column vectors passed through cannot: its output is rows.
  override def supportsColumnar: Boolean = topK.isEmpty
  override def supportsRowBased: Boolean = true

  override protected def doExecute(): RDD[InternalRow] = {
    val plan = scoring()
    child.executeColumnar().mapPartitions(batches =>
      plan.scorePartition(plan.columnarInput(batches).flatMap(plan.columnSlices)), preservesPartitioning = true)
  }

  override protected def doExecuteColumnar(): RDD[ColumnarBatch] = {
    val plan = scoring()
    child.executeColumnar().mapPartitions(batches =>
      plan.scoreColumnarPartition(plan.columnarInput(batches)), preservesPartitioning = true)
  }

  override protected def withNewChildInternal(newChild: SparkPlan): ColumnarBatchScoreExec = copy(child = newChild)
}
