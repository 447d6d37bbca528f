package treescore.execution

import org.apache.spark.sql.catalyst.InternalRow

/**
 * One task's scoring state for one score call: leases, buffers and native handles, sized once
 * and reused for every batch. Not thread-safe; close() frees everything, once.
 */
trait TaskScorer extends AutoCloseable {
  /** Scores a batch of at most batchRows rows. */
  def score(batch: InputBatch): Unit
  /** Row i's result from the last batch. */
  def result(i: Int): Any
  /** Row i's result from the last batch as field `ordinal` of `into`. */
  def writeResult(i: Int, into: InternalRow, ordinal: Int): Unit = into.update(ordinal, result(i))
}
