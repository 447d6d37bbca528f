package treescore.rules

import org.apache.spark.sql.catalyst.expressions.Expression

/**
 * A top-K query over one of a [[BatchScore]]'s scores: the operator above keeps only the `k`
 * rows with the best values of score number `score` (largest when `descending`) within each
 * group of equal `groupBy` values (one group when empty), and ranks rows by that score first.
 * So the BatchScore may drop any row that k rows of its group beat strictly, unscored: that
 * changes neither a sort's first k rows nor the rank of any row ranked k or better.
 * [[InferTopKSelection]] finds such queries; execution drops the rows
 * ([[treescore.execution.TopKScorer]]).
 */
case class TopKSelection(score: Int, k: Int, descending: Boolean, groupBy: Seq[Expression]) {
  /** How plans show it, `scoreName` naming the score's column: "top 10 by s#12 descending per (market#3)". */
  def describe(scoreName: String): String = {
    val groups = if (groupBy.isEmpty) "" else s" per ${groupBy.mkString("(", ", ", ")")}"
    s"top $k by $scoreName ${if (descending) "descending" else "ascending"}$groups"
  }
}
