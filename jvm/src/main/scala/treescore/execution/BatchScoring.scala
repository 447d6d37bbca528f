package treescore.execution

import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, GenericInternalRow, JoinedRow, UnsafeProjection}
import org.apache.spark.sql.execution.metric.SQLMetric

import treescore.expressions.BatchableScore
import treescore.model.Engine

/**
 * What a batched score operator does in each partition, whichever way its input arrives: opens
 * the task's scorers with the first batch (an empty partition leases no model and allocates
 * nothing), scores each batch with every call, and joins every input row to its scores. Built
 * on the driver and shipped with the task.
 */
private[execution] final case class BatchScoring(scores: Seq[BatchableScore], engines: Seq[Engine],
    inputSchema: Seq[Attribute], output: Seq[Attribute], resultAttrs: Seq[Attribute], batchRows: Int,
    nativeThreads: Int, metrics: Map[String, SQLMetric]) {

  /** Scores one partition's batches, each row joined to its scores as the row is read. */
  def scorePartition(batches: Iterator[InputBatch]): Iterator[InternalRow] = {
    lazy val scorer = {
      val opened = new BatchScorer(scores, engines, inputSchema, batchRows, nativeThreads, metrics)
      TaskContext.get().addTaskCompletionListener[Unit](_ => opened.close())
      opened
    }
    val results = new GenericInternalRow(scores.length)
    val joined = new JoinedRow
    val toOutput = UnsafeProjection.create(output, inputSchema ++ resultAttrs)
    val numOutputRows = metrics("numOutputRows")
    batches.flatMap { batch =>
      scorer.score(batch)
      numOutputRows += batch.numRows
      batch.rows.zipWithIndex.map { case (row, i) =>
        var k = 0
        while (k < scores.length) { results.update(k, scorer.result(k, i)); k += 1 }
        toOutput(joined(row, results))
      }
    }
  }
}
