package treescore.rules

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.{SparkPlan, SparkStrategy}
import org.apache.spark.sql.internal.SQLConf

import treescore.execution.BatchScoreExec
import treescore.model.Engine

/** Plans a [[BatchScore]] node as [[BatchScoreExec]], choosing each call's engine from the session's conf. */
object BatchScoreStrategy extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case BatchScore(scores, passThrough, resultAttrs, child, topK) =>
      val engines = scores.map(s => Engine.forCall(s.models, s.modelKind, SQLConf.get))
      BatchScoreExec(scores, engines, passThrough, resultAttrs, planLater(child), topK) :: Nil
    case _ => Nil
  }
}
