package org.apache.spark.sql.treescore

import org.apache.spark.sql.Column
import org.apache.spark.sql.catalyst.expressions.Expression

/**
 * Converts between Columns and Catalyst expressions (Spark 3.5 shim). In Spark 3.5 a Column
 * wraps its expression publicly; the 4.x shim goes through `classic.ExpressionUtils` instead.
 */
object ColumnBridge {
  def column(expression: Expression): Column = new Column(expression)
  def expression(column: Column): Expression = column.expr
}
