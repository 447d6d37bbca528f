package treescore.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.execution.metric.SQLMetric

import treescore.expressions.BatchableScore
import treescore.model.Engine

/**
 * One task's scoring state for the score calls of one BatchScoreExec; call k's results are
 * field `ordinals(k)` of the result row (k itself unless a top-K selection scores one call).
 */
private[execution] final class BatchScorer(
    scores: Seq[BatchableScore],
    engines: Seq[Engine],
    inputSchema: Seq[Attribute],
    batchRows: Int,
    nativeThreads: Int,
    metrics: Map[String, SQLMetric],
    ordinals: IndexedSeq[Int]) extends AutoCloseable {

  // Calls that read the same features share one matrix; closed after the calls that read it.
  private val matrices = new FeatureMatrices(inputSchema, batchRows, metrics.get("featureValuesWritten"),
    metrics.get("featureValuesInPlace"))

  private val calls: IndexedSeq[TaskScorer] = {
    val opened = IndexedSeq.newBuilder[TaskScorer]
    try scores.zip(engines).foreach { case (s, e) =>
      opened += TaskScorers.open(s, e, matrices, inputSchema, batchRows, nativeThreads, metrics)
    } catch {
      case e: Throwable =>
        try opened.result().foreach(_.close()) finally matrices.close()
        throw e
    }
    opened.result()
  }

  /** Scores a batch of at most batchRows rows with every call: one native call each. */
  def score(batch: InputBatch): Unit = {
    require(batch.numRows <= batchRows, s"batch of ${batch.numRows} rows exceeds $batchRows")
    calls.foreach(_.score(batch))
    metrics("numBatches") += 1
  }

  /** Row i's results from the last batch, call k's as field ordinals(k) of `into`. */
  def results(i: Int, into: InternalRow): Unit = {
    var k = 0
    while (k < calls.length) { calls(k).writeResult(i, into, ordinals(k)); k += 1 }
  }

  override def close(): Unit = try calls.foreach(_.close()) finally matrices.close()
}
