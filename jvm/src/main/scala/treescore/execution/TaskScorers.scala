package treescore.execution

import java.util.IdentityHashMap
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicLong

import scala.collection.mutable

import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, BoundReference}
import org.apache.spark.sql.execution.metric.SQLMetric

import treescore.expressions.{BatchableScore, ProgramScoreExpression, RowScoring, ScoreExpression}
import treescore.model.{Engine, PredictKind}
import treescore.nativelib.ModelCache
import treescore.rules.TopKSelection

/**
 * Opens the task scorer for a score call, and scores calls one row at a time for [[treescore.expressions.RowScore]].
 *
 * Row at a time, a task opens each call's scorer once and reuses it for every row: opening one
 * leases models, allocates off-heap buffers and (for programs) compiles native code, far dearer
 * than scoring one row. The task's completion closes them. Outside a task (Spark's optimizer
 * folding a row-at-a-time call over local data on the driver, in a session without treescore's
 * rules) nothing would close a scorer later, so each call opens and closes its own.
 */
object TaskScorers extends RowScoring {
  /** Model calls take their feature matrix from `matrices`, which the caller closes after the scorer. */
  def open(call: BatchableScore, engine: Engine, matrices: FeatureMatrices, inputSchema: Seq[Attribute],
      batchRows: Int, nativeThreads: Int, metrics: Map[String, SQLMetric]): TaskScorer = call match {
    case s: ScoreExpression => ModelTaskScorer.open(s, engine, matrices, batchRows, nativeThreads, metrics)
    case p: ProgramScoreExpression => ProgramTaskScorer.open(p, engine, inputSchema, batchRows, nativeThreads, metrics)
  }

  /**
   * Every model the scorers of an operator's calls lease in a task, each once: the calls' own in
   * their `engines`, and the top-K selected call's as its scan ranks it ([[TopKScorer]]).
   */
  def operatorRequests(calls: Seq[BatchableScore], engines: Seq[Engine], topK: Option[TopKSelection]): Seq[ModelCache.Request] =
    calls.indices.flatMap { k =>
      (calls(k), topK.exists(_.score == k)) match {
        case (s: ScoreExpression, true) => Seq(ModelCache.Request(s.model, s.options.iterations, Engine.Treescore, PredictKind.Raw))
        case (call, true) => call.cacheRequests(Engine.Treescore)
        case (call, false) => call.cacheRequests(engines(k))
      }
    }.distinct

  /** The operator metric that counts the rows (grid points included) an engine scored. */
  def rowsMetric(engine: Engine): String = s"rowsBy_${engine.name}"

  // For tests: row-at-a-time scorers opened in this JVM, and how many are open now (a leak check).
  private[treescore] val rowScorersOpened = new AtomicLong
  private[treescore] val rowScorersOpen = new AtomicLong

  // Each running task attempt's row scorers, by call instance.
  private val byTask = new ConcurrentHashMap[Long, IdentityHashMap[BatchableScore, RowScorer]]

  override def scoreRow(call: BatchableScore, row: InternalRow): Any = {
    val task = TaskContext.get()
    if (task == null) {
      val scorer = new RowScorer(call)
      try scorer.score(row) finally scorer.close()
    } else forTask(task, call).score(row)
  }

  private def forTask(task: TaskContext, call: BatchableScore): RowScorer = {
    val attempt = task.taskAttemptId()
    var scorers = byTask.get(attempt)
    if (scorers == null) {
      scorers = new IdentityHashMap[BatchableScore, RowScorer]
      byTask.put(attempt, scorers)
      task.addTaskCompletionListener[Unit] { _ =>
        val owned = new Owned
        byTask.remove(attempt).values.forEach(scorer => owned(scorer))
        owned.close()
      }
    }
    var scorer = scorers.get(call)
    if (scorer == null) {
      scorer = try new RowScorer(call) catch {
        // The cache refuses a task that holds models and would wait for room: where they are
        // this task's idle row scorers', returning them lets it wait, and they open again when next used.
        case _: ModelCache.NoRoomYet if returnIdle(scorers) => new RowScorer(call)
      }
      scorers.put(call, scorer)
    }
    scorer
  }

  /** Closes the task's row scorers that are not scoring now (a call's features may call others); true if any. */
  private def returnIdle(scorers: IdentityHashMap[BatchableScore, RowScorer]): Boolean = {
    val idle = mutable.ArrayBuffer.empty[RowScorer]
    scorers.values.removeIf { scorer => if (!scorer.scoring) idle += scorer; !scorer.scoring }
    val owned = new Owned
    idle.foreach(owned(_))
    owned.close()
    idle.nonEmpty
  }

  /**
   * One call's task scorer over a batch of one row, on one thread. A model call's features are
   * evaluated by the call's own children, which is what higher-order functions (transform,
   * aggregate) set their lambda variables for; the scorer reads the values by position. A
   * program reads its inputs, grid values included, from the row itself.
   */
  private final class RowScorer(call: BatchableScore) extends AutoCloseable {
    // In a task, SQLConf.get is the conf of the query's session, which Spark ships with the task.
    private val engine = Engine.forCall(call.models, call.modelKind)
    private val matrices = new FeatureMatrices(Nil, 1)
    private val (scorer, input): (TaskScorer, InternalRow => InternalRow) =
      try call match {
        case s: ScoreExpression =>
          val byPosition = s.copy(children = s.children.zipWithIndex.map { case (c, i) => BoundReference(i, c.dataType, c.nullable) })
          (open(byPosition, engine, matrices, Nil, 1, 1, Map.empty), row => InternalRow.fromSeq(s.children.map(_.eval(row))))
        case other => (open(other, engine, matrices, Nil, 1, 1, Map.empty), identity)
      } catch { case e: Throwable => matrices.close(); throw e }
    rowScorersOpened.incrementAndGet()
    rowScorersOpen.incrementAndGet()

    // Whether a row is being scored: its features may call other scorers of the task meanwhile.
    private[TaskScorers] var scoring = false

    def score(row: InternalRow): Any = {
      scoring = true
      try {
        scorer.score(new RowBatch(Seq(input(row))))
        scorer.result(0)
      } finally scoring = false
    }

    override def close(): Unit = {
      try scorer.close() finally matrices.close()
      rowScorersOpen.decrementAndGet()
    }
  }
}
