package treescore.rules

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.{SparkPlan, SparkStrategy}

import treescore.execution.BatchScoreExec

/** Plans a [[BatchScore]] node as [[BatchScoreExec]]. */
object BatchScoreStrategy extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case BatchScore(scores, resultAttrs, child) => BatchScoreExec(scores, resultAttrs, planLater(child)) :: Nil
    case _ => Nil
  }
}
