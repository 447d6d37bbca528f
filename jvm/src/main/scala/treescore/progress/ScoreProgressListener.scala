package treescore.progress

import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicLong

import org.apache.spark.SparkContext
import org.apache.spark.scheduler.{AccumulableInfo, SparkListener, SparkListenerExecutorMetricsUpdate, SparkListenerTaskEnd}

import treescore.Numbers

/**
 * Counts the rows treescore has scored in this application so far, for progress reports: the
 * "rows scored" metric of every BatchScoreExec, summed over finished tasks and the running
 * tasks' latest executor heartbeats (spark.executor.heartbeatInterval apart).
 *
 * {{{
 *   val progress = ScoreProgressListener.attach(spark.sparkContext)
 *   ... progress.rowsScored ...
 *   progress.detach()
 * }}}
 */
final class ScoreProgressListener private (sc: SparkContext) extends SparkListener {
  private val finished = new AtomicLong()
  private val running = new ConcurrentHashMap[Long, java.lang.Long]()
  // A heartbeat taken before a task ended may arrive after it; an ended task is not running again.
  private val ended = ConcurrentHashMap.newKeySet[Long]()

  /** Rows scored since this listener was attached. */
  def rowsScored: Long = {
    var sum = finished.get()
    running.values().forEach(v => sum += v)
    sum
  }

  def detach(): Unit = sc.removeSparkListener(this)

  override def onTaskEnd(taskEnd: SparkListenerTaskEnd): Unit = {
    val id = taskEnd.taskInfo.taskId
    if (taskEnd.taskInfo.successful) finished.addAndGet(ScoreProgressListener.rows(taskEnd.taskInfo.accumulables))
    ended.add(id)
    running.remove(id)
  }

  override def onExecutorMetricsUpdate(update: SparkListenerExecutorMetricsUpdate): Unit =
    update.accumUpdates.foreach { case (taskId, _, _, accumulables) =>
      val rows = ScoreProgressListener.rows(accumulables)
      if (rows > 0 && !ended.contains(taskId)) running.put(taskId, rows)
    }
}

object ScoreProgressListener {
  /** BatchScoreExec's metric of rows scored, by the name it shows in the Spark UI. */
  val RowsScoredMetric = "rows scored"

  def attach(sc: SparkContext): ScoreProgressListener = {
    val listener = new ScoreProgressListener(sc)
    sc.addSparkListener(listener)
    listener
  }

  private def rows(accumulables: collection.Seq[AccumulableInfo]): Long =
    accumulables.iterator.filter(_.name.contains(RowsScoredMetric)).map(a => a.update match {
      case Some(n: Long) => n
      case Some(n: java.lang.Long) => n.longValue
      case Some(s: String) => Numbers.long(s).getOrElse(0L)
      case _ => 0L
    }).sum
}
