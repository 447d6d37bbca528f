package treescore.execution

/**
 * The threads a task's native calls run on: `spark.treescore.native.threads`, but never more than
 * the cores the task holds (`spark.task.cpus`, or its resource profile's). Threads beyond them
 * would run on cores Spark gave other tasks, and hold working memory the model budget reserves
 * per core only ([[treescore.nativelib.CacheBudget]]).
 */
private[treescore] object CallThreads {
  def forTask(configured: Int, taskCpus: Int): Int = math.max(1, math.min(configured, taskCpus))

  /** What the driver logs, planning an operator, when the setting asks for more threads than a task's cores. */
  def warning(configured: Int, taskCpus: Int): Option[String] =
    if (configured <= taskCpus) None
    else Some(s"spark.treescore.native.threads=$configured is more than spark.task.cpus=$taskCpus: each native " +
      s"call runs on ${forTask(configured, taskCpus)} thread(s), the cores its task holds. Set spark.task.cpus=" +
      s"$configured as well for $configured threads per call.")
}
