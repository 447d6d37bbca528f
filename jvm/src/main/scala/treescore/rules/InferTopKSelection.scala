package treescore.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Alias, And, Attribute, Descending, Expression, IntegerLiteral,
  LessThan, LessThanOrEqual, GreaterThan, GreaterThanOrEqual, Rank, RowNumber, SortOrder, WindowExpression}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, GlobalLimit, LocalLimit, LogicalPlan, Project, Sort, Window}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.types.DoubleType

import treescore.TreescoreConf
import treescore.ensemble.{EnsembleScorer, ModelScorer, RoutedScorer, Scorer}
import treescore.expressions.{ProgramScoreExpression, ScoreExpression}
import treescore.model.{Engine, PredictKind}

/**
 * Finds top-K queries over a score and tells the [[BatchScore]] beneath them
 * ([[TopKSelection]]), so that it scores only the rows that can reach the top:
 *
 *  - `ORDER BY score DESC LIMIT k` (or ASC, with more sort keys after the score): a Limit over
 *    a Sort whose first key is the score, with at most a Project between;
 *  - `rank() <= k` or `row_number() <= k` over `PARTITION BY g ORDER BY score DESC`: a Filter
 *    keeping rank <= k (or < k + 1) over a Window computing only that rank, per group of g.
 *
 * Between the query and the BatchScore only Projects may stand (a Filter there would remove
 * rows after they set the bar). The score must be one model's prediction or raw score with one
 * output, or an ensemble (weights of 0 or more) or route of such models, ensembles and routes,
 * on treescore's engine and without linear trees, and the groups must be computed from the
 * BatchScore's input.
 * `dense_rank`, which counts tied rows once, and every other shape are left as they are:
 * they are still exact, scored in full.
 */
case class InferTopKSelection(session: SparkSession) extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan =
    if (!TreescoreConf.TopKEnabled.from(session.sessionState.conf)) plan
    else plan.transformDown {
      case global @ GlobalLimit(IntegerLiteral(k), local @ LocalLimit(IntegerLiteral(localK), below)) if k == localK =>
        val selected = below match {
          case sort: Sort if sort.global => select(sort.child, sort.order, k, Nil).map(c => sort.copy(child = c))
          case project @ Project(_, sort: Sort) if sort.global =>
            select(sort.child, sort.order, k, Nil).map(c => project.copy(child = sort.copy(child = c)))
          case _ => None
        }
        selected.map(c => global.copy(child = local.copy(child = c))).getOrElse(global)
      case filter @ Filter(condition, window: Window) =>
        rankLimit(condition, window)
          .flatMap(k => select(window.child, window.orderSpec, k, window.partitionSpec))
          .map(c => filter.copy(child = window.withNewChildren(Seq(c)))).getOrElse(filter)
    }

  /** The k of a Filter keeping `rank <= k` over a Window that computes one rank or row number, if it is one. */
  private def rankLimit(condition: Expression, window: Window): Option[Int] = window.windowExpressions match {
    case Seq(alias @ Alias(WindowExpression(_: Rank | _: RowNumber, _), _)) =>
      val rank = alias.toAttribute
      conjuncts(condition).collectFirst {
        case LessThanOrEqual(a: Attribute, IntegerLiteral(k)) if a.semanticEquals(rank) => k
        case LessThan(a: Attribute, IntegerLiteral(k)) if a.semanticEquals(rank) => k - 1
        case GreaterThanOrEqual(IntegerLiteral(k), a: Attribute) if a.semanticEquals(rank) => k
        case GreaterThan(IntegerLiteral(k), a: Attribute) if a.semanticEquals(rank) => k - 1
      }.filter(_ >= 1)
    case _ => None
  }

  private def conjuncts(e: Expression): Seq[Expression] = e match {
    case And(left, right) => conjuncts(left) ++ conjuncts(right)
    case other => Seq(other)
  }

  /** `plan` with its BatchScore told of the query, if the sort's first key is one of its scores. */
  private def select(plan: LogicalPlan, order: Seq[SortOrder], k: Int, groupBy: Seq[Expression]): Option[LogicalPlan] =
    order.headOption.flatMap { first =>
      first.child match {
        case key: Attribute if k >= 1 => mark(plan, key, first.direction == Descending, k, groupBy)
        case _ => None
      }
    }

  private def mark(plan: LogicalPlan, key: Attribute, descending: Boolean, k: Int,
      groupBy: Seq[Expression]): Option[LogicalPlan] = plan match {
    case project @ Project(list, child) =>
      // Follow the key and the groups through the Project's aliases to what its child computes.
      val computed = list.collect { case a: Alias => a.toAttribute.exprId -> a.child }.toMap
      val keyBelow = list.find(_.exprId == key.exprId).collect {
        case a: Attribute => a
        case Alias(a: Attribute, _) => a
      }
      val groupsBelow = groupBy.map(_.transform { case a: Attribute if computed.contains(a.exprId) => computed(a.exprId) })
      keyBelow.flatMap(mark(child, _, descending, k, groupsBelow)).map(c => project.copy(child = c))
    case batch: BatchScore if batch.topK.isEmpty =>
      val index = batch.resultAttrs.indexWhere(_.exprId == key.exprId)
      val groupsReadInput = groupBy.forall(g => g.deterministic && g.references.subsetOf(batch.child.outputSet))
      if (index < 0 || !groupsReadInput || !selectable(batch, index)) None
      else Some(batch.copy(topK = Some(TopKSelection(index, k, descending, groupBy))))
    case _ => None
  }

  /**
   * Whether execution can select by this score, on treescore's engine: one model's single
   * prediction or raw score, or the score of a weighted ensemble or route whose members are
   * models or such ensembles and routes, with weights of 0 or more (an ensemble's bound is then
   * the combination of its members' bounds, innermost first; a route's, its picked member's).
   */
  private def selectable(batch: BatchScore, index: Int): Boolean = {
    val call = batch.scores(index)
    val bounded = call match {
      case s: ScoreExpression => (s.modelKind == PredictKind.Prediction || s.modelKind == PredictKind.Raw) && s.dataType == DoubleType
      case p: ProgramScoreExpression => p.grid.isEmpty && !p.contributions && (p.scorer match {
        case ensemble: EnsembleScorer => boundable(ensemble)
        case route: RoutedScorer => boundable(route)
        case _ => false
      })
      case _ => false
    }
    // A linear leaf's value grows with the row's values, so leaf values bound no linear tree.
    bounded && !call.models.exists(_.hasLinearTrees) &&
      Engine.forCall(call.models, call.modelKind, session.sessionState.conf) == Engine.Treescore
  }

  /**
   * Whether a scorer's output is bounded by its models' bounds: a model, an ensemble of such with
   * weights of 0 or more, or a route to such (a row's bound is then that of the scorer it picks).
   */
  private def boundable(scorer: Scorer): Boolean = scorer match {
    case _: ModelScorer => true
    case EnsembleScorer(members, _, _) => members.forall(m => m.weight >= 0 && boundable(m.scorer))
    case RoutedScorer(_, routes, default, _) => (routes.map(_._2) ++ default).forall(boundable)
    case _ => false
  }
}
