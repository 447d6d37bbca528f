package treescore.execution

import java.util.concurrent.ConcurrentHashMap

import scala.collection.mutable

import org.apache.spark.TaskContext

import treescore.nativelib.{ModelCache, ModelLease}

/**
 * The models a task's batched operators lease, asked of the cache together.
 *
 * Operators of one pipeline run in one task, an upper one reading the rows a lower one scores,
 * so the lower one's models are held when the upper one begins. A task that holds models may not
 * wait for more (two such tasks could wait on each other), so under contention the cache would
 * refuse the upper one ([[ModelCache.NoRoomYet]]) and fail the task. Spark calls every
 * operator's partition function of a task before the first row moves, and there each operator
 * names the models it will lease ([[expect]]). The first operator to score leases what every
 * operator named, holding nothing yet, so it may wait for room ([[Part.begin]]); the others find
 * theirs held. The leases go back once every operator that began has ended ([[Part.end]]), so an
 * operator that begins only after another has read all its input (a sort between them) asks with
 * nothing held as well. An operator set up only after another began (where an operator between
 * them reads ahead in a thread of its own, as Python UDFs do) asks for what it lacks as it
 * begins, which the cache may refuse under contention; Spark then retries the task.
 */
private[execution] object TaskLeases {
  // Each running task attempt's parts, by attempt id.
  private val byTask = new ConcurrentHashMap[Long, Parts]

  /**
   * Names the models an operator of the current task leases; called from its partition function,
   * before any row moves. Outside a task nothing is shared, and the part leases its own models.
   */
  def expect(requests: Seq[ModelCache.Request]): Part = {
    val task = TaskContext.get()
    val parts = if (task == null) new Parts else byTask.computeIfAbsent(task.taskAttemptId(), attempt => {
      val created = new Parts
      task.addTaskCompletionListener[Unit](_ => byTask.remove(attempt).returnAll())
      created
    })
    parts.add(requests)
  }

  /** One operator's part in its task's leases. */
  final class Part private[TaskLeases] (parts: Parts, val requests: Seq[ModelCache.Request]) {
    private[TaskLeases] var begun = false // guarded by `parts`
    private[TaskLeases] var ended = false

    /**
     * Before the operator opens its scorers: leases what the task's operators named and the task
     * does not hold yet, with its own models among them. Returns the time their loads took.
     */
    def begin(): Long = parts.begin(this)

    /** After the operator's last row, or with its task: the task's leases go back with the last part that began. */
    def end(): Unit = parts.end(this)
  }

  /** A task's parts, and the leases they hold together; its lock guards both. */
  private final class Parts {
    private val live = mutable.ArrayBuffer.empty[Part]
    private val leased = mutable.LinkedHashMap.empty[ModelCache.Request, ModelLease]
    private var scoring = 0 // parts begun and not ended

    def add(requests: Seq[ModelCache.Request]): Part = synchronized {
      val part = new Part(this, requests)
      live += part
      part
    }

    def begin(part: Part): Long = synchronized {
      if (part.begun || part.ended) 0L
      else {
        val missing = live.iterator.flatMap(_.requests).filterNot(leased.contains).toSeq.distinct
        val leases = ModelCache.acquireAll(missing)
        missing.zip(leases).foreach { case (request, lease) => leased(request) = lease }
        part.begun = true
        scoring += 1
        leases.map(_.loadNanos).sum
      }
    }

    def end(part: Part): Unit = synchronized {
      if (!part.ended) {
        part.ended = true
        live -= part
        if (part.begun) {
          scoring -= 1
          if (scoring == 0) returnAll()
        }
      }
    }

    def returnAll(): Unit = synchronized {
      val owned = new Owned
      leased.valuesIterator.foreach(owned(_))
      leased.clear()
      owned.close()
    }
  }
}
