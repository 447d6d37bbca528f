package treescore.rules

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}

import treescore.expressions.BatchableScore

/**
 * Scores every row of `child` with each of `scores`, appending one column per score
 * (`resultAttrs`, in the same order). Planned as [[treescore.execution.BatchScoreExec]].
 */
case class BatchScore(scores: Seq[BatchableScore], resultAttrs: Seq[Attribute], child: LogicalPlan)
  extends UnaryNode {

  override def output: Seq[Attribute] = child.output ++ resultAttrs
  override def producedAttributes: AttributeSet = AttributeSet(resultAttrs)

  override protected def withNewChildInternal(newChild: LogicalPlan): BatchScore = copy(child = newChild)
}
