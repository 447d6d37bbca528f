package treescore.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.vectorized.ColumnarBatch

/**
 * A batch of input rows as a task's scorers read it: rows that BatchScoreExec buffered, or a
 * slice of a columnar batch read in place, column by column where a writer can. Each batch is
 * a new instance, which is how a feature matrix knows it has written a batch already.
 */
private[treescore] sealed trait InputBatch {
  def numRows: Int
  /** The rows in order; on a columnar batch each row is a view, valid until the next is read. */
  def rows: Iterator[InternalRow]
}

private[treescore] final class RowBatch(held: collection.Seq[InternalRow]) extends InputBatch {
  override def numRows: Int = held.length
  override def rows: Iterator[InternalRow] = held.iterator
}

/** Rows [first, first + numRows) of `columns`. */
private[treescore] final class ColumnSlice(val columns: ColumnarBatch, val first: Int, override val numRows: Int)
    extends InputBatch {
  override def rows: Iterator[InternalRow] = Iterator.range(first, first + numRows).map(columns.getRow)
}
