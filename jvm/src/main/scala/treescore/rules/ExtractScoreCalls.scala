package treescore.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, AttributeReference, Expression,
  NamedExpression, NamedLambdaVariable, OuterReference, SubqueryExpression, WindowExpression}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, LogicalPlan, Project, Subquery}
import org.apache.spark.sql.catalyst.rules.Rule

import treescore.TreescoreConf
import treescore.expressions.{BatchableScore, RowScore}
import treescore.nativelib.NativeLoader

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
 * Under a Project or an Aggregate, whose output is made of expressions alone, the BatchScore
 * passes on only the child columns they read: scoring 200 features for a `select(id, score)`
 * builds rows of two columns, not of 201.
 *
 * So `expm1(0.7 * score(a) + 0.3 * score(b))`, a filter on a score, an aggregate over a score
 * and a join condition on one side's score are all scored in batches. A score over another
 * score's result is scored in a second BatchScore above the first.
 *
 * A score over aggregate results (`score(m, avg(x), ...)` in an Aggregate) is first moved into a
 * Project above the Aggregate, as Spark's ExtractPythonUDFFromAggregate does for Python UDFs, and
 * then batched there. Calls that read anything a child's rows do not hold stay where they are and
 * are evaluated row at a time: features that span several children, lambda variables (a score
 * inside `transform`), outer references of a correlated subquery, window functions and subqueries.
 *
 * First, every call's features that no tree reads become missing values ([[UnreadFeatures]]),
 * so that their columns are neither read nor written.
 */
case class ExtractScoreCalls(session: SparkSession) extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan = {
    // In local mode this JVM scores: a platform without treescore's natives fails here, on the
    // driver, before any job starts. Elsewhere only executors need natives; the driver may be a
    // laptop of another platform.
    if (session.sparkContext.isLocal && plan.exists(_.expressions.exists(_.exists {
          case _: BatchableScore | _: RowScore => true
          case _ => false
        }))) {
      NativeLoader.ensureLoaded()
    }
    batched(plan)
  }

  private def batched(plan: LogicalPlan): LogicalPlan = plan match {
    // A correlated subquery keeps its shape for decorrelation. Scalar ones are pulled into the
    // outer query before this rule runs there, which batches their calls again; EXISTS and IN
    // become joins only after it, so their calls are scored one row at a time.
    case s: Subquery if s.correlated => rowAtATime(plan)
    case _ if !TreescoreConf.BatchEnabled.from(session.sessionState.conf) => rowAtATime(plan)
    case _ => rowAtATime(UnreadFeatures.asMissing(asCalls(plan)).transformUp {
      case batch: BatchScore => batch
      case agg: Aggregate if agg.aggregateExpressions.exists(scoresOverAggregates(_, agg)) =>
        extract(scoresAboveAggregate(agg))
      case operator => extract(operator)
    })
  }

  /** Calls built as row-at-a-time ones (before this session had the rule) are batched too. */
  private def asCalls(plan: LogicalPlan): LogicalPlan = plan.transformAllExpressions {
    case RowScore(call) => call
  }

  /** The calls left in operators, which no BatchScore scores, are evaluated one row at a time. */
  private def rowAtATime(plan: LogicalPlan): LogicalPlan = plan.transformUp {
    case batch: BatchScore => batch
    case operator => operator.transformExpressions { case call: BatchableScore => RowScore(call) }
  }

  /** An aggregate result or a grouping key, the values an Aggregate's output is made of. */
  private def belongsToAggregate(e: Expression, agg: Aggregate): Boolean =
    e.isInstanceOf[AggregateExpression] || agg.groupingExpressions.exists(_.semanticEquals(e))

  private def scoresOverAggregates(e: Expression, agg: Aggregate): Boolean = e.exists {
    case s: BatchableScore => s.children.exists(_.exists(belongsToAggregate(_, agg)))
    case _ => false
  }

  /**
   * Aggregate(keys, [score(m, avg(x)) AS p, ...]) becomes
   * Project([score(m, a) AS p, ...], Aggregate(keys, [avg(x) AS a, ...])): the aggregates and
   * keys under a score are computed by the Aggregate, the score over them in the Project.
   */
  private def scoresAboveAggregate(agg: Aggregate): LogicalPlan = {
    val aggregated = Seq.newBuilder[NamedExpression]
    val projected = agg.aggregateExpressions.map { expr =>
      if (!scoresOverAggregates(expr, agg)) {
        aggregated += expr
        expr.toAttribute
      } else {
        expr.transformDown {
          case e if belongsToAggregate(e, agg) =>
            val alias = e match {
              case named: NamedExpression => Alias(named, named.name)(exprId = named.exprId)
              case _ => Alias(e, "treescore_agg")()
            }
            aggregated += alias
            alias.toAttribute
        }.asInstanceOf[NamedExpression]
      }
    }
    Project(projected, agg.copy(aggregateExpressions = aggregated.result()))
  }

  /** Whether a call reads only its operator's input rows, so it can be scored beneath it. */
  private def readsOnlyRows(call: Expression): Boolean = !call.exists {
    case _: AggregateExpression | _: WindowExpression | _: SubqueryExpression | _: OuterReference => true
    case _: NamedLambdaVariable => true
    case _ => false
  }

  /** Calls with no score call among their own features: the ones that can be scored first. */
  private def innermostCalls(expressions: Seq[Expression]): Seq[BatchableScore] =
    expressions.flatMap(_.collect {
      case s: BatchableScore if !s.children.exists(_.exists(_.isInstanceOf[BatchableScore])) => s
    })

  private def extract(operator: LogicalPlan): LogicalPlan = {
    val calls = innermostCalls(operator.expressions)
      .filter(c => c.references.subsetOf(operator.inputSet) && readsOnlyRows(c))
      .groupBy(_.canonicalized).values.map(_.head).toSeq // identical calls are scored once
    if (calls.isEmpty) return operator

    var resultFor = Map.empty[Expression, Attribute] // canonical call -> its result column
    val newChildren = operator.children.map { child =>
      val here = calls.filter(c => c.references.subsetOf(child.outputSet) && !resultFor.contains(c.canonicalized))
      if (here.isEmpty) child
      else {
        val results = here.map(c => AttributeReference("treescore_score", c.dataType, c.nullable)())
        resultFor ++= here.map(_.canonicalized).zip(results)
        BatchScore(here, child.output, results, child)
      }
    }
    if (resultFor.isEmpty) return operator

    val rewritten = withColumnsRead(operator.withNewChildren(newChildren).transformExpressions {
      case s: BatchableScore if resultFor.contains(s.canonicalized) => resultFor(s.canonicalized)
    })
    val scored = extract(rewritten) // scores over score results, one layer up
    if (scored.output == operator.output) scored else Project(operator.output, scored)
  }

  /**
   * A Project's or an Aggregate's new BatchScore children pass through only the columns it
   * reads. Other operators keep every column: they pass their child's columns on (Filter,
   * Join), or refer to them by position (Generate).
   */
  private def withColumnsRead(operator: LogicalPlan): LogicalPlan = operator match {
    case _: Project | _: Aggregate =>
      val read = operator.references
      operator.mapChildren {
        case batch: BatchScore => batch.copy(passThrough = batch.passThrough.filter(read.contains))
        case other => other
      }
    case _ => operator
  }
}
