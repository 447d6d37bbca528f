package treescore.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{AttributeReference, Expression, NamedExpression}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, Project}
import org.apache.spark.sql.catalyst.rules.Rule

import treescore.TreescoreConf
import treescore.expressions.ScoreExpression

/**
 * Moves the score calls of each Project into a [[BatchScore]] node beneath it, shaped like
 * Spark's ExtractPythonUDFs: collect the calls, score them all in one batched node that
 * appends a column per call, and make the Project read those columns instead. Identical calls
 * are scored once. A score call whose features themselves contain a score call is left to
 * the row-at-a-time fallback.
 */
case class ExtractScoreCalls(session: SparkSession) extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan = {
    if (!TreescoreConf.batchEnabled(session.sessionState.conf)) plan
    else plan.transformUp { case project: Project if extractable(project.projectList).nonEmpty => extract(project) }
  }

  private def extractable(expressions: Seq[Expression]): Seq[ScoreExpression] =
    expressions.flatMap(_.collect {
      case s: ScoreExpression if !s.children.exists(_.exists(_.isInstanceOf[ScoreExpression])) => s
    })

  private def extract(project: Project): LogicalPlan = {
    val scores = extractable(project.projectList).foldLeft(Vector.empty[ScoreExpression]) { (unique, s) =>
      if (unique.exists(_.semanticEquals(s))) unique else unique :+ s
    }
    val results = scores.zipWithIndex.map { case (s, i) => AttributeReference(s"treescore_$i", s.dataType, s.nullable)() }
    val rewritten = project.projectList.map(_.transformDown {
      case s: ScoreExpression if scores.exists(_.semanticEquals(s)) => results(scores.indexWhere(_.semanticEquals(s)))
    }.asInstanceOf[NamedExpression])
    Project(rewritten, BatchScore(scores, results, project.child))
  }
}
