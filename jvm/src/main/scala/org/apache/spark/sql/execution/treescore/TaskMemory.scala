package org.apache.spark.sql.execution.treescore

import org.apache.spark.TaskContext
import org.apache.spark.memory.{MemoryConsumer, MemoryMode, TaskMemoryManager}

/**
 * A task's share of Spark's execution memory, for treescore's off-heap task buffers: where Spark
 * manages off-heap execution memory (spark.memory.offHeap.enabled), a buffer is granted by the
 * task's memory manager before it is allocated, so Spark counts it, lends it to no one else, and
 * fails the task cleanly when there is none. Here, in Spark's namespace, because a task's memory
 * manager is Spark's own API.
 */
object TaskMemory {

  /** A grant of bytes that close() gives back, once. */
  sealed trait Grant extends AutoCloseable

  private object NoGrant extends Grant { override def close(): Unit = () }

  private final class BufferGrant(manager: TaskMemoryManager, val bytes: Long)
    extends MemoryConsumer(manager, manager.pageSizeBytes(), MemoryMode.OFF_HEAP) with Grant {
    private var held = 0L
    // Native buffers cannot be written out to disk.
    override def spill(size: Long, trigger: MemoryConsumer): Long = 0L
    def acquire(): Long = { held = acquireMemory(bytes); held }
    override def close(): Unit = if (held > 0) { freeMemory(held); held = 0 }
  }

  /**
   * Asks the running task's memory manager for `bytes` of off-heap execution memory where Spark
   * manages it; outside a task, or with on-heap execution memory, grants nothing and asks nothing.
   * Throws, naming the settings, when Spark cannot grant all of it.
   */
  def acquire(bytes: Long): Grant = {
    val task = TaskContext.get()
    if (task == null || bytes <= 0) return NoGrant
    val manager = task.taskMemoryManager()
    if (manager.getTungstenMemoryMode != MemoryMode.OFF_HEAP) return NoGrant
    val grant = new BufferGrant(manager, bytes)
    val granted = grant.acquire()
    if (granted < bytes) {
      grant.close()
      throw new IllegalStateException(s"treescore: Spark's off-heap execution memory granted $granted of the $bytes " +
        "bytes a task's buffers need; raise spark.memory.offHeap.size, or lower spark.treescore.batch.maxBytes")
    }
    grant
  }

  /** Execution memory the running task holds now, for tests. */
  def heldByThisTask: Long = Option(TaskContext.get()).map(_.taskMemoryManager().getMemoryConsumptionForThisTask).getOrElse(0L)
}
