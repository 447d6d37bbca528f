package treescore

import org.apache.spark.sql.internal.SQLConf

/** treescore's `spark.treescore.*` settings, read from the session's SQL conf. */
object TreescoreConf {
  val BatchEnabled = "spark.treescore.batch.enabled"
  val BatchRows = "spark.treescore.batch.rows"
  val NativeThreads = "spark.treescore.native.threads"
  val BroadcastThresholdBytes = "spark.treescore.broadcast.thresholdBytes"

  /** Whether score calls are moved into the batched operator (false: row-at-a-time eval). */
  def batchEnabled(conf: SQLConf): Boolean = conf.getConfString(BatchEnabled, "true").toBoolean

  /** Rows per native call. Large enough to amortise the call; small enough to stay in cache. */
  def batchRows(conf: SQLConf): Int = positive(conf, BatchRows, 8192)

  /**
   * LightGBM threads per native call. Spark already runs one task per core, so the default of
   * 1 never oversubscribes the cores; raise it only when tasks are fewer than cores.
   */
  def nativeThreads(conf: SQLConf): Int = positive(conf, NativeThreads, 1)

  /**
   * Models whose text is larger than this (bytes, or a size such as 100m) reach executors as a
   * Spark broadcast, fetched once per executor, instead of inside every task's plan; see
   * [[treescore.model.ModelShipping]]. Default 100m; 0 broadcasts every model.
   */
  def broadcastThresholdBytes(conf: SQLConf): Long = {
    val raw = conf.getConfString(BroadcastThresholdBytes, "100m")
    val bytes = try org.apache.spark.network.util.JavaUtils.byteStringAsBytes(raw) catch {
      case _: NumberFormatException => -1L
    }
    if (bytes < 0) throw new IllegalArgumentException(s"$BroadcastThresholdBytes must be a size such as 100m or 1048576, got '$raw'")
    bytes
  }

  private def positive(conf: SQLConf, key: String, default: Int): Int = {
    val raw = conf.getConfString(key, default.toString)
    Numbers.int(raw).filter(_ > 0).getOrElse(
      throw new IllegalArgumentException(s"$key must be a positive integer, got '$raw'"))
  }
}
