package treescore.expressions

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.analysis.TypeCheckResult
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.types.DataType

/**
 * A score call evaluated one row at a time, with the same scores as the batched operator: calls
 * the rule cannot batch (features from both sides of a join, a lambda's variables), every call
 * where `spark.treescore.batch.enabled` is false, and calls built for a session without
 * treescore's rules. Its children are the call's own, so analysis and optimization see through it.
 */
case class RowScore(call: BatchableScore) extends Expression with CodegenFallback {
  override def children: Seq[Expression] = call.children
  override def dataType: DataType = call.dataType
  override def nullable: Boolean = call.nullable
  override def prettyName: String = call.prettyName
  override def checkInputDataTypes(): TypeCheckResult = call.checkInputDataTypes()
  override def eval(row: InternalRow): Any = call.rowScoring.scoreRow(call, row)
  override def toString: String = call.toString
  override def sql: String = call.sql

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): RowScore =
    RowScore(call.withNewChildren(newChildren).asInstanceOf[BatchableScore])
}
