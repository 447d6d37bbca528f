package treescore.expressions

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.LeafExpression
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.types.{DataType, DoubleType}

/**
 * The current grid point's value inside a what-if grid's derived features. The scorer sets
 * `current` before evaluating a row's features at each grid point; generated projections call
 * back into this very instance (CodegenFallback), so they see the value it holds.
 */
case class GridValue(name: String) extends LeafExpression with CodegenFallback {
  @transient var current: Double = Double.NaN

  override def dataType: DataType = DoubleType
  override def nullable: Boolean = false
  override def eval(input: InternalRow): Any = current
  override def toString: String = s"grid($name)"
  override def sql: String = s"grid_value('$name')"
}
