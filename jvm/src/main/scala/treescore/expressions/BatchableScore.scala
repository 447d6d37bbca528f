package treescore.expressions

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Expression

import treescore.model.{PredictKind, TreeModel}

/**
 * A score call: what to score (a model or a program of models), over which inputs, with which
 * output. BatchScoreExec scores it a batch at a time; `eval` is the row-at-a-time fallback for
 * plans the rule does not rewrite, through [[RowScoring]], and gives the same scores.
 */
trait BatchableScore extends Expression {
  /** The models this call scores with; the operator ships the large ones before it runs. */
  def models: Seq[TreeModel]

  /** The output kind its models are asked for, which decides the engine that can serve it. */
  def modelKind: PredictKind

  /** Scores per input row: a what-if grid's points, otherwise 1. A batch holds at most batch.rows scores. */
  def pointsPerRow: Int = 1

  /** Scores this call one row at a time. */
  def rowScoring: RowScoring

  final override def eval(row: InternalRow): Any = rowScoring.scoreRow(this, row)
}
