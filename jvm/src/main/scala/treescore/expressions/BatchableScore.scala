package treescore.expressions

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.execution.metric.SQLMetric

import treescore.model.TreeModel

/**
 * A score call that BatchScoreExec can evaluate a batch at a time. Each task opens its own
 * [[TaskScorer]]: buffers, model leases and native state for the life of the task.
 */
trait BatchableScore extends Expression {
  /** The models this call scores with; the operator ships the large ones before it runs. */
  def models: Seq[TreeModel]

  def openTaskScorer(inputSchema: Seq[Attribute], batchRows: Int, nativeThreads: Int,
      metrics: Map[String, SQLMetric]): TaskScorer
}

/** One task's scoring state for one score call. Not thread-safe; close() frees everything. */
trait TaskScorer extends AutoCloseable {
  /** Scores a batch of at most batchRows rows. */
  def score(batch: collection.Seq[InternalRow]): Unit
  /** Row i's result from the last batch. */
  def result(i: Int): Any
}
