package treescore.rules

import org.apache.spark.sql.catalyst.expressions.{Expression, Literal}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.types.DoubleType

import treescore.expressions.{BatchableScore, FeatureInput, GridValue, ProgramScoreExpression, ScoreExpression}

/**
 * Score calls' features that no tree reads are given as missing (a null double) instead of
 * their expressions. The scores are the same, since no tree splits on them and no linear leaf
 * reads them; but their columns are no longer referenced, so Spark does not read them: a
 * cache or Parquet scan decodes only the columns some tree reads, the operator writes only
 * those, and a score call that only fed an unread feature is not made at all. Models commonly
 * split on half of the features they were trained with.
 *
 * Calls over the same feature expressions keep the features any of them reads, so that they
 * still read one feature matrix ([[treescore.execution.FeatureMatrices]]). Features were
 * checked against the model at analysis, before this rewrite: a column of the wrong type is
 * an error whether or not a tree reads it.
 */
object UnreadFeatures {
  /** What an unread feature is given as. */
  val Missing: Literal = Literal(null, DoubleType)

  def asMissing(plan: LogicalPlan): LogicalPlan = {
    val calls = plan.flatMap(_.expressions.flatMap(_.collect { case s: BatchableScore if prunable(s) => s }))
    if (calls.isEmpty) return plan
    val readTogether = calls.groupBy(together).map { case (key, group) => key -> group.map(read).reduce(_ ++ _) }
    plan.transformAllExpressions {
      case s: BatchableScore if prunable(s) =>
        readTogether.get(together(s)).fold(s: Expression) { read => // absent: a call in a subquery's plan
          val children = s.children.zipWithIndex.map { case (child, i) => if (read(i)) child else Missing }
          if (children == s.children) s else s.withNewChildren(children)
        }
    }
  }

  private def prunable(call: BatchableScore): Boolean = call match {
    case s: ScoreExpression => s.input == FeatureInput.ScalarColumns
    case _: ProgramScoreExpression => true
    case _ => false
  }

  /** Calls that read one matrix: of the same kind, over the same expressions. */
  private def together(call: BatchableScore): (Boolean, Seq[Expression]) =
    (call.isInstanceOf[ScoreExpression], call.children.map(_.canonicalized))

  /** The positions of the call's children that some tree reads. */
  private def read(call: BatchableScore): Set[Int] = call match {
    case s: ScoreExpression => s.children.indices.filter(s.model.readsFeature).toSet
    case p: ProgramScoreExpression =>
      val read = p.scorer.inputsRead
      // Routing keys follow the numeric inputs; an input with a grid value keeps it, so the grid's axes stay as planned.
      p.children.indices.filter { i =>
        i >= p.featureInputs.length || read(p.featureInputs(i)) || p.children(i).exists(_.isInstanceOf[GridValue])
      }.toSet
  }
}
