package treescore.expressions

import org.apache.spark.sql.catalyst.InternalRow

/**
 * How a score call is evaluated one row at a time ([[RowScore]]), where no BatchScoreExec scores it:
 * plans the rule cannot rewrite, or sessions without treescore's extensions. Execution
 * implements it (`treescore.execution.TaskScorers`), because every scorer that lives for a task
 * is execution's; the public API hands it to each call it builds, so expressions only describe.
 */
trait RowScoring extends Serializable {
  def scoreRow(call: BatchableScore, row: InternalRow): Any
}
