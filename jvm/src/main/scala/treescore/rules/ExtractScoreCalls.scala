package treescore.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, Project, Subquery}
import org.apache.spark.sql.catalyst.rules.Rule

import treescore.TreescoreConf
import treescore.expressions.BatchableScore

/**
 * Moves score calls out of every operator into [[BatchScore]] nodes beneath it, shaped like
 * Spark's ExtractPythonUDFs:
 *
 *  1. collect the operator's score calls whose features come from one child;
 *  2. put a BatchScore over that child, appending one column per distinct call;
 *  3. make the operator read those columns instead of calling score;
 *  4. where the operator passes its child's columns through (Filter, Join, ...), add a Project
 *     on top so the helper columns do not leak into its output.
 *
 * So `expm1(0.7 * score(a) + 0.3 * score(b))`, a filter on a score, an aggregate over a score
 * and a join condition on one side's score are all scored in batches. A score over another
 * score's result is scored in a second BatchScore above the first. Calls whose features span
 * several children stay where they are and are evaluated row at a time.
 */
case class ExtractScoreCalls(session: SparkSession) extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan = plan match {
    case _ if !TreescoreConf.batchEnabled(session.sessionState.conf) => plan
    case s: Subquery if s.correlated => plan
    case _ => plan.transformUp {
      case batch: BatchScore => batch
      case operator => extract(operator)
    }
  }

  /** Calls with no score call among their own features: the ones that can be scored first. */
  private def innermostCalls(expressions: Seq[Expression]): Seq[BatchableScore] =
    expressions.flatMap(_.collect {
      case s: BatchableScore if !s.children.exists(_.exists(_.isInstanceOf[BatchableScore])) => s
    })

  private def extract(operator: LogicalPlan): LogicalPlan = {
    val calls = innermostCalls(operator.expressions)
      .filter(_.references.subsetOf(operator.inputSet))
      .groupBy(_.canonicalized).values.map(_.head).toSeq // identical calls are scored once
    if (calls.isEmpty) return operator

    var resultFor = Map.empty[Expression, Attribute] // canonical call -> its result column
    val newChildren = operator.children.map { child =>
      val here = calls.filter(c => c.references.subsetOf(child.outputSet) && !resultFor.contains(c.canonicalized))
      if (here.isEmpty) child
      else {
        val results = here.map(c => AttributeReference("treescore_score", c.dataType, c.nullable)())
        resultFor ++= here.map(_.canonicalized).zip(results)
        BatchScore(here, results, child)
      }
    }
    if (resultFor.isEmpty) return operator

    val rewritten = operator.withNewChildren(newChildren).transformExpressions {
      case s: BatchableScore if resultFor.contains(s.canonicalized) => resultFor(s.canonicalized)
    }
    val scored = extract(rewritten) // scores over score results, one layer up
    if (scored.output == operator.output) scored else Project(operator.output, scored)
  }
}
