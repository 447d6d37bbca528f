package treescore.expressions

import org.apache.spark.sql.catalyst.expressions.{LeafExpression, Unevaluable}
import org.apache.spark.sql.types.{DataType, DoubleType}

/**
 * Stands for the current grid point's value inside a what-if grid's inputs (the varied input
 * itself, and the derived inputs computed from it). It only describes: the task scorer that
 * expands the grid puts its own value source in its place.
 */
case class GridValue(name: String) extends LeafExpression with Unevaluable {
  override def dataType: DataType = DoubleType
  override def nullable: Boolean = false
  override def toString: String = s"grid($name)"
  override def sql: String = s"grid_value('$name')"
}
