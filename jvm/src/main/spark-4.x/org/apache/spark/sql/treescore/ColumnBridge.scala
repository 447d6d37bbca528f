package org.apache.spark.sql.treescore

import org.apache.spark.sql.Column
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.classic.ExpressionUtils

/**
 * Converts between Columns and Catalyst expressions (Spark 4.x shim). Spark 4 keeps that conversion
 * `private[sql]`, so, as Delta and Comet do, the one place that needs it lives under
 * `org.apache.spark.sql`; everything else in treescore goes through here.
 */
object ColumnBridge {
  def column(expression: Expression): Column = ExpressionUtils.column(expression)
  def expression(column: Column): Expression = ExpressionUtils.expression(column)
}
