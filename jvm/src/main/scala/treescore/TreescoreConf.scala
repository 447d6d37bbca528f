package treescore

import org.apache.spark.sql.internal.SQLConf

/** treescore's `spark.treescore.*` settings, read from the session's SQL conf. */
object TreescoreConf {
  val BatchEnabled = "spark.treescore.batch.enabled"
  val BatchRows = "spark.treescore.batch.rows"
  val NativeThreads = "spark.treescore.native.threads"

  /** Whether score calls are moved into the batched operator (false: row-at-a-time eval). */
  def batchEnabled(conf: SQLConf): Boolean = conf.getConfString(BatchEnabled, "true").toBoolean

  /** Rows per native call. Large enough to amortise the call; small enough to stay in cache. */
  def batchRows(conf: SQLConf): Int = positive(conf, BatchRows, 8192)

  /**
   * LightGBM threads per native call. Spark already runs one task per core, so the default of
   * 1 never oversubscribes the cores; raise it only when tasks are fewer than cores.
   */
  def nativeThreads(conf: SQLConf): Int = positive(conf, NativeThreads, 1)

  private def positive(conf: SQLConf, key: String, default: Int): Int = {
    val raw = conf.getConfString(key, default.toString)
    raw.toIntOption.filter(_ > 0).getOrElse(
      throw new IllegalArgumentException(s"$key must be a positive integer, got '$raw'"))
  }
}
