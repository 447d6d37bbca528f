package treescore.expressions

import java.util.concurrent.atomic.AtomicLong

import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.execution.metric.SQLMetric

import treescore.model.TreeModel

/**
 * A score call that BatchScoreExec can evaluate a batch at a time. Each task opens its own
 * [[TaskScorer]]: buffers, model leases and native state for the life of the task.
 *
 * `eval` is the row-at-a-time fallback for plans the rule does not rewrite: the same task
 * scorer over a batch of one row, so both paths give the same scores.
 */
trait BatchableScore extends Expression {
  /** The models this call scores with; the operator ships the large ones before it runs. */
  def models: Seq[TreeModel]

  def openTaskScorer(inputSchema: Seq[Attribute], batchRows: Int, nativeThreads: Int,
      metrics: Map[String, SQLMetric]): TaskScorer

  /**
   * Inside a task the scorer is opened once and reused for every row: opening it leases models,
   * allocates off-heap buffers and (for programs) compiles native code, far dearer than scoring
   * one row. The task's completion closes it.
   */
  final override def eval(row: InternalRow): Any = {
    val task = TaskContext.get()
    if (task == null) { // outside a task (e.g. constant folding on the driver): nothing would close it later
      val scorer = openRowScorer()
      try scoreOne(scorer, row) finally closeRowScorer(scorer)
    } else scoreOne(rowScorer(task), row)
  }

  /** The call that scores one row in `eval`, reading [[rowInput]]: by default this call, over the row itself. */
  protected def rowForm: BatchableScore = this
  protected def rowInput(row: InternalRow): InternalRow = row

  // eval's children are already bound to the row (so an empty input schema), and it scores one row on one thread.
  private def openRowScorer(): TaskScorer = {
    val scorer = rowForm.openTaskScorer(Nil, batchRows = 1, nativeThreads = 1, metrics = Map.empty)
    BatchableScore.rowScorersOpened.incrementAndGet()
    BatchableScore.rowScorersOpen.incrementAndGet()
    scorer
  }

  private def closeRowScorer(scorer: TaskScorer): Unit = {
    scorer.close()
    BatchableScore.rowScorersOpen.decrementAndGet()
  }

  private def scoreOne(scorer: TaskScorer, row: InternalRow): Any = {
    scorer.score(Seq(rowInput(row)))
    scorer.result(0)
  }

  // One expression instance normally serves one task; keyed by attempt in case an instance is reused.
  @transient private var taskRowScorer: Option[(Long, TaskScorer)] = None

  private def rowScorer(task: TaskContext): TaskScorer = taskRowScorer match {
    case Some((attempt, scorer)) if attempt == task.taskAttemptId() => scorer
    case _ =>
      val scorer = openRowScorer()
      task.addTaskCompletionListener[Unit](_ => closeRowScorer(scorer))
      taskRowScorer = Some((task.taskAttemptId(), scorer))
      scorer
  }
}

private[treescore] object BatchableScore {
  // For tests: row-at-a-time scorers opened in this JVM, and how many are open now (a leak check).
  val rowScorersOpened = new AtomicLong
  val rowScorersOpen = new AtomicLong
}

/** One task's scoring state for one score call. Not thread-safe; close() frees everything. */
trait TaskScorer extends AutoCloseable {
  /** Scores a batch of at most batchRows rows. */
  def score(batch: collection.Seq[InternalRow]): Unit
  /** Row i's result from the last batch. */
  def result(i: Int): Any
}
