package org.apache.spark.sql.execution.treescore

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.RowToColumnConverter
import org.apache.spark.sql.execution.vectorized.WritableColumnVector
import org.apache.spark.sql.types.StructType

/**
 * Appends rows to column vectors with Spark's own converter, the one RowToColumnarExec uses
 * (every type, nulls, arrays); it is private to Spark's execution package, so it is reached from here.
 */
final class RowsToColumns(schema: StructType) extends Serializable {
  private val converter = new RowToColumnConverter(schema)

  /** Appends `row`, one field per vector. */
  def append(row: InternalRow, vectors: Array[WritableColumnVector]): Unit = converter.convert(row, vectors)
}
