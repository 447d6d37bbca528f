package treescore.execution

import org.apache.spark.TaskContext
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, GenericInternalRow, JoinedRow, UnsafeProjection}
import org.apache.spark.sql.execution.{ExplainUtils, SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}

import treescore.TreescoreConf
import treescore.expressions.BatchableScore
import treescore.model.Engine

/**
 * Scores its child's rows in batches: up to batch.rows scores' rows are buffered, their features
 * written into one off-heap matrix per distinct feature list (calls of several models over the
 * same columns share one), each model is called once per batch through
 * JNI, and the scores are joined back onto the rows (as Spark's EvalPythonExec does).
 * `engines(k)` evaluates the trees of `scores(k)`; the plan string shows them.
 */
case class BatchScoreExec(scores: Seq[BatchableScore], engines: Seq[Engine], resultAttrs: Seq[Attribute],
    child: SparkPlan)
  extends UnaryExecNode {

  override def output: Seq[Attribute] = child.output ++ resultAttrs
  override def producedAttributes: AttributeSet = AttributeSet(resultAttrs)

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "rows scored"),
    "numBatches" -> SQLMetrics.createMetric(sparkContext, "batches"),
    "nativeTime" -> SQLMetrics.createNanoTimingMetric(sparkContext, "native scoring time"),
    "modelLoadTime" -> SQLMetrics.createNanoTimingMetric(sparkContext, "model load time"),
    "escalatedRows" -> SQLMetrics.createMetric(sparkContext, "rows escalated by cascades"),
    "featureValuesWritten" -> SQLMetrics.createMetric(sparkContext, "feature values written for models"),
    TaskScorers.rowsMetric(Engine.Treescore) -> SQLMetrics.createMetric(sparkContext, "rows scored by treescore's engine"),
    TaskScorers.rowsMetric(Engine.LightGbm) -> SQLMetrics.createMetric(sparkContext, "rows scored by LightGBM"))

  override protected def doExecute(): RDD[InternalRow] = {
    // batch.rows bounds the scores per batch, so a grid's batch has fewer rows and the same memory.
    val batchRows = math.max(1, TreescoreConf.BatchRows.from(conf) / scores.map(_.pointsPerRow).max)
    val nativeThreads = TreescoreConf.NativeThreads.from(conf)
    val inputSchema = child.output
    val allMetrics = metrics
    // On the driver, before the plan is serialized: large models go as broadcasts, not in the plan.
    val broadcastThreshold = TreescoreConf.BroadcastThresholdBytes.from(conf)
    scores.flatMap(_.models).distinct.foreach(_.shipIfLarge(sparkContext, broadcastThreshold))
    child.execute().mapPartitions({ rows =>
      // Opened with the first batch, so empty partitions lease no models and allocate nothing.
      lazy val scorer = {
        val opened = new BatchScorer(scores, engines, inputSchema, batchRows, nativeThreads, allMetrics)
        TaskContext.get().addTaskCompletionListener[Unit](_ => opened.close())
        opened
      }
      val results = new GenericInternalRow(scores.length)
      val joined = new JoinedRow
      val toOutput = UnsafeProjection.create(output, inputSchema ++ resultAttrs)
      val numOutputRows = allMetrics("numOutputRows")
      // The child reuses one row buffer, so each row is copied before it is held in a batch.
      rows.map(_.copy()).grouped(batchRows).flatMap { batch =>
        scorer.score(batch)
        numOutputRows += batch.length
        batch.iterator.zipWithIndex.map { case (row, i) =>
          var k = 0
          while (k < scores.length) { results.update(k, scorer.result(k, i)); k += 1 }
          toOutput(joined(row, results))
        }
      }
    }, preservesPartitioning = true)
  }

  private def onEngines: Seq[String] = scores.indices.map(k => s"${scores(k)} on the ${engines(k)} engine")

  /** explain() shows each call with its engine, then the result columns. */
  override def simpleString(maxFields: Int): String =
    s"$nodeName ${onEngines.mkString("[", ", ", "]")}, ${resultAttrs.mkString("[", ", ", "]")}"

  /** explain("formatted") lists the score calls and, once the plan has run, its metrics. */
  override def verboseStringWithOperatorId(): String = {
    val listed = scores.indices.map(k => s"${resultAttrs(k)} = ${onEngines(k)}").mkString("\n  ", "\n  ", "")
    val measured = metrics.toSeq.sortBy(_._1).map { case (_, m) => s"${m.name.getOrElse("")}: ${m.value}" }
    s"""$formattedNodeName
       |${ExplainUtils.generateFieldString("Input", child.output)}
       |Scores:$listed
       |Metrics: ${measured.mkString(", ")}
       |""".stripMargin
  }

  override protected def withNewChildInternal(newChild: SparkPlan): BatchScoreExec = copy(child = newChild)
}
