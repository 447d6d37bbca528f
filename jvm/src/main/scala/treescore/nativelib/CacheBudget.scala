package treescore.nativelib

import org.apache.spark.SparkConf

import treescore.TreescoreConf
import treescore.wire.WireLimits

/**
 * What an executor's native memory allows the model cache (docs/tuning.md, "Sizing native
 * memory"). A cluster manager kills an executor whose process outgrows its heap plus
 * `spark.executor.memoryOverhead`, and that overhead must also hold the JVM's own native memory
 * (metaspace, code cache, thread stacks, network buffers) and each running task's native memory.
 * So under `spark.treescore.cache.maxBytes=auto` the models get what is left of the overhead after
 * [[CacheBudget.JvmReserveBytes]] for the JVM and, per task slot, `spark.treescore.batch.maxBytes`
 * (the most one task's buffers and per-row working memory hold) and, for each of its task's
 * `spark.task.cpus` threads, [[CacheBudget.WorkingReserveBytes]] (the working memory of a native
 * call's thread, which does not grow with the batch).
 *
 * Where Spark manages off-heap execution memory (`spark.memory.offHeap.enabled`), the task buffers
 * come out of `spark.memory.offHeap.size` instead ([[org.apache.spark.sql.execution.treescore.TaskMemory]]), which
 * Spark asks the cluster manager for besides the overhead: then the overhead reserves only the
 * working allowance per slot.
 *
 * In local mode the executor is the driver's own process, which no cluster manager bounds: there
 * `auto` is [[CacheBudget.LocalBytes]].
 */
final case class CacheBudget(overheadBytes: Long, overheadSource: String, taskSlots: Int, threadsPerTask: Int,
    taskBufferBytesEach: Long, configured: Option[Long], local: Boolean) {
  import CacheBudget._

  /**
   * A slot's working memory: the allowance for each thread its task's native calls may run on,
   * one per core it holds (`spark.treescore.native.threads` up to `spark.task.cpus`).
   */
  val workingBytesEach: Long = threadsPerTask.toLong * WorkingReserveBytes

  /** What the task slots may hold at once: each its buffers and its working memory. */
  val taskBytes: Long = taskSlots.toLong * (taskBufferBytesEach + workingBytesEach)

  /** The model cache's budget in bytes. */
  val maxBytes: Long = configured.getOrElse {
    if (local) LocalBytes else math.max(0L, overheadBytes - JvmReserveBytes - taskBytes)
  }

  /** How much more overhead the JVM's reserve, the task buffers and the budget need; 0 if none. */
  def shortfallBytes: Long =
    if (local) 0L else math.max(0L, JvmReserveBytes + taskBytes + maxBytes - overheadBytes)

  /** How the budget was reached, for log lines and errors. */
  def describe: String = configured match {
    case Some(bytes) => s"${TreescoreConf.CacheMaxBytes.key}=${readable(bytes)}"
    case None if local => s"${TreescoreConf.CacheMaxBytes.key}=auto, ${readable(LocalBytes)} in local mode"
    case None =>
      s"${TreescoreConf.CacheMaxBytes.key}=auto: ${readable(maxBytes)} of the executor's $overheadSource, after " +
        s"${readable(JvmReserveBytes)} for the JVM and " +
        s"${readable(taskBytes)} for $taskSlots task slots' ${tasksHold}"
  }

  private def tasksHold: String = {
    val working = if (threadsPerTask > 1) s"working memory for $threadsPerTask threads each" else "working memory"
    if (taskBufferBytesEach == 0) s"$working (Spark's off-heap execution memory holds their buffers)" else s"buffers and $working"
  }

  /** The warning an executor's start gives where its overhead cannot hold what treescore needs. */
  def warning: Option[String] = {
    val short = shortfallBytes
    if (short > 0) {
      Some(s"treescore: the executor's $overheadSource cannot hold treescore's native memory: " +
        s"${readable(JvmReserveBytes)} for the JVM, ${readable(taskBytes)} for $taskSlots task slots' $tasksHold and " +
        s"${readable(maxBytes)} for models (${TreescoreConf.CacheMaxBytes.key}). Raise spark.executor.memoryOverhead by at " +
        s"least ${readable(short)}, or lower ${TreescoreConf.CacheMaxBytes.key}; otherwise a cluster manager may kill " +
        "executors for their memory.")
    } else if (configured.isEmpty && !local && maxBytes < SmallBytes) {
      Some(s"treescore: the executor's $overheadSource leaves ${readable(maxBytes)} for native models " +
        s"(${describe}); a model larger than that cannot be scored. Raise spark.executor.memoryOverhead by the " +
        "native size of the models a job uses at once (docs/tuning.md, \"Sizing native memory\").")
    } else None
  }
}

object CacheBudget {
  /** The overhead left to the JVM's own native memory; docs/tuning.md reserves the same. */
  val JvmReserveBytes: Long = 256L << 20
  /**
   * Per task slot, the working memory of native calls that does not grow with the batch:
   * wire/limits.txt's TaskWorkingMemoryBytes, which native/src/memory/working_memory.h shares out
   * (the copies a model takes a part at a time, TreeSHAP's block and memo, the engine's scratch).
   * docs/tuning.md reserves the same.
   */
  val WorkingReserveBytes: Long = WireLimits.TaskWorkingMemoryBytes
  /** `auto` in local mode, where no cluster manager bounds the process. */
  val LocalBytes: Long = 2L << 30
  /** An `auto` budget below this gets a warning at startup. */
  val SmallBytes: Long = 64L << 20

  // Spark's own defaults for the executor's memory and its overhead.
  private val DefaultExecutorMemoryMiB = 1024L
  private val DefaultOverheadFactor = 0.10
  private val DefaultMinOverheadMiB = 384L

  /** The budget for executors of an application with configuration `conf`. */
  def of(conf: SparkConf): CacheBudget = {
    val configured = TreescoreConf.CacheMaxBytes.read(conf.getOption(TreescoreConf.CacheMaxBytes.key))
    val master = conf.get("spark.master", "")
    val local = master == "local" || master.startsWith("local[")
    val (overhead, source) = overheadOf(conf)
    val offHeapBuffers = conf.getBoolean("spark.memory.offHeap.enabled", false) &&
      conf.getSizeAsBytes("spark.memory.offHeap.size", "0") > 0
    val taskBuffers = if (offHeapBuffers) 0L else TreescoreConf.BatchMaxBytes.read(conf.getOption(TreescoreConf.BatchMaxBytes.key))
    CacheBudget(overhead, source, taskSlots(conf, master), threadsPerTask(conf), taskBuffers, configured, local)
  }

  /**
   * The largest budget an executor of the application can have, as its driver knows it. Where
   * `spark.executor.cores` is not set, each executor's processors decide its task slots; one slot
   * leaves the models the most room.
   */
  def largestOf(conf: SparkConf): CacheBudget = {
    val budget = of(conf)
    if (budget.local || conf.contains("spark.executor.cores")) budget else budget.copy(taskSlots = 1)
  }

  private def overheadOf(conf: SparkConf): (Long, String) = conf.getOption("spark.executor.memoryOverhead") match {
    case Some(raw) =>
      val bytes = conf.getSizeAsMb("spark.executor.memoryOverhead") << 20
      (bytes, s"spark.executor.memoryOverhead=$raw (${readable(bytes)})")
    case None =>
      val memoryMiB = conf.getSizeAsMb("spark.executor.memory", s"${DefaultExecutorMemoryMiB}m")
      val factor = conf.getDouble("spark.executor.memoryOverheadFactor", DefaultOverheadFactor)
      val minimumMiB = conf.getSizeAsMb("spark.executor.minMemoryOverhead", s"${DefaultMinOverheadMiB}m")
      val bytes = math.max((factor * memoryMiB).toLong, minimumMiB) << 20
      (bytes, f"default memory overhead (${readable(bytes)}: ${factor * 100}%.0f%% of spark.executor.memory=${memoryMiB}m, " +
        s"at least ${minimumMiB}m)")
  }

  // Tasks that run at once in one executor.
  private def taskSlots(conf: SparkConf, master: String): Int = {
    val LocalThreads = """local\[(\d+)(?:,\d+)?\]""".r
    val cores = master match {
      case LocalThreads(n) => n.toInt
      case _ => conf.getInt("spark.executor.cores", Runtime.getRuntime.availableProcessors())
    }
    math.max(1, cores / threadsPerTask(conf))
  }

  /** The cores each task holds, and so the native threads its calls may run on without taking another task's core. */
  private[treescore] def threadsPerTask(conf: SparkConf): Int = math.max(1, conf.getInt("spark.task.cpus", 1))

  /** A byte count as people read one: KiB below a MiB, MiB above. */
  private[treescore] def readable(bytes: Long): String = if (bytes < (1L << 20)) s"${bytes >> 10} KiB" else s"${bytes >> 20} MiB"
}
