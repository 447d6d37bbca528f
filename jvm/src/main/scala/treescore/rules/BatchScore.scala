package treescore.rules

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}

import treescore.expressions.BatchableScore

/**
 * Scores every row of `child` with each of `scores`: its output is the child's columns the
 * operator above reads (`passThrough`), then one column per score (`resultAttrs`, in the same
 * order). Planned as [[treescore.execution.BatchScoreExec]]. With a `topK` selection, it may leave
 * out rows that cannot reach the top-K query above it ([[TopKSelection]]).
 */
case class BatchScore(scores: Seq[BatchableScore], passThrough: Seq[Attribute], resultAttrs: Seq[Attribute],
    child: LogicalPlan, topK: Option[TopKSelection] = None) extends UnaryNode {

  override def output: Seq[Attribute] = passThrough ++ resultAttrs
  override def producedAttributes: AttributeSet = AttributeSet(resultAttrs)

  override protected def withNewChildInternal(newChild: LogicalPlan): BatchScore = copy(child = newChild)
}
