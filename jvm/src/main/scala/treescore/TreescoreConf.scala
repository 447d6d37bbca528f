package treescore

import org.apache.spark.network.util.JavaUtils
import org.apache.spark.sql.internal.SQLConf

import treescore.wire.WireLimits

/**
 * One `spark.treescore.*` setting, declared once: its key, default, documentation and how a
 * value is read. docs/configuration.md is checked against these declarations
 * (ConfigurationDocSuite), so the reference cannot drift from the code.
 *
 * @param default the default as a user would write it ("" where there is none)
 * @param when    where the value is read: "query" (the session's SQL conf, when a query is
 *                planned, so spark.conf.set applies to later queries) or "application" (the
 *                executors' Spark conf, fixed when the application starts)
 */
final case class ConfEntry[T](key: String, default: String, when: String, doc: String, parse: (String, String) => T) {
  /** The value of `raw`, or of the default when it is not set; a bad value names the key. */
  def read(raw: Option[String]): T = parse(key, raw.getOrElse(default))
  def from(conf: SQLConf): T = read(Option(conf.getConfString(key, null)))
}

/** treescore's settings. */
object TreescoreConf {
  val BatchEnabled: ConfEntry[Boolean] = ConfEntry("spark.treescore.batch.enabled", "true", "query",
    "Move score calls into the batched operator `BatchScoreExec`. `false` evaluates every score call one row at a " +
      "time (same scores, much slower); useful only to rule the operator out when investigating a problem.",
    boolean)

  val ColumnarEnabled: ConfEntry[Boolean] = ConfEntry("spark.treescore.columnar.enabled", "true", "query",
    "Where the input of the batched operator arrives as columnar batches (the vectorized Parquet and ORC readers, " +
      "the in-memory columnar cache, any scan that produces column vectors), read the features from the column vectors, a column at " +
      "a time, instead of having Spark turn the batches into rows first (`columnar input` after `BatchScore` in the plan). `false` " +
      "keeps the row input (`BatchScore`); the scores are the same.", boolean)

  val TopKEnabled: ConfEntry[Boolean] = ConfEntry("spark.treescore.topK.enabled", "true", "query",
    "For a top-K query over a model's score (`ORDER BY score DESC LIMIT k`, or `rank() <= k` / `row_number() <= k` " +
      "over a window ordered by the score), score only the rows that can reach the top: the trees are scored in " +
      "stages, and a row is dropped as soon as the largest score its remaining trees allow falls below the k-th best " +
      "exact score of its group (`top k by score ...` after `BatchScore` in the plan). The result is the same rows with " +
      "the same scores as scoring every row; `false` scores every row in full. See [top-k.md](top-k.md).", boolean)

  val BatchRows: ConfEntry[Int] = ConfEntry("spark.treescore.batch.rows", "8192", "query",
    "Rows per native call. Each task holds one off-heap matrix of `batch.rows x features` doubles per model " +
      "(8192 x 200 features = 12.5 MiB) plus the batch's input rows. A what-if grid's points count as rows: a " +
      "batch holds `batch.rows / points` input rows (at least one). See [tuning.md](tuning.md). Must be a positive " +
      "integer.", positiveInt)

  val BatchMaxBytes: ConfEntry[Long] = ConfEntry("spark.treescore.batch.maxBytes", "16m", "query",
    "Most off-heap buffer memory one batched operator's task holds: per input row, each call's features and outputs " +
      "(a contribution is `features + 1` doubles per class, a grid's every point counts), and the per-row working " +
      "memory of ensembles, routes, cascades and top-K selection, times 8 bytes. Where " +
      "`batch.rows` rows would take more, batches hold fewer rows: very wide models and contributions get smaller " +
      "batches, not more memory. The automatic model budget (`cache.maxBytes=auto`) leaves this much room per task " +
      s"slot, and ${WireLimits.TaskWorkingMemoryBytes >> 20} MiB more per core of a task (`spark.task.cpus`) for working memory that does not grow with the batch. See [tuning.md](tuning.md#sizing-native-memory). Accepts byte sizes like `64m`.", size("16m or 64m"))

  val NativeThreads: ConfEntry[Int] = ConfEntry("spark.treescore.native.threads", "1", "query",
    "Threads per native call of treescore's engine (LightGBM's predictor, built without OpenMP, runs on the task's thread). Spark already runs one task per core, so 1 never oversubscribes " +
      "the executor's cores. Raise it only when an executor runs fewer concurrent tasks than it has cores, together " +
      "with `spark.task.cpus`: a call runs on at most the cores its task holds, and the driver logs a warning when " +
      "this asks for more. Must be a positive integer.", positiveInt)

  val EngineChoice: ConfEntry[String] = ConfEntry("spark.treescore.engine", "auto", "query",
    "Which code evaluates the trees. `auto`: treescore's own exact engine wherever it supports the call (everything " +
      "but contributions of models that lack training counts), LightGBM's predictor " +
      "otherwise. `treescore`: treescore's engine, and an error " +
      "naming the reason for a call it cannot serve. `lightgbm`: LightGBM's predictor for every call. Both engines " +
      "give the same bits; `explain` and the operator's metrics show which one scored each call. See " +
      "[exactness.md](exactness.md).", oneOf("auto", "treescore", "lightgbm"))

  val CacheMaxBytes: ConfEntry[Option[Long]] = ConfEntry("spark.treescore.cache.maxBytes", "auto", "application",
    "Per-executor budget for the native memory of loaded models, as treescore's native memory account counts it " +
      "(what the engine builds, TreeSHAP tables included). Room is reserved before a model is loaded or builds " +
      "tables: the least recently used models that no task is using are freed, and where the models in use leave " +
      "too little, the task waits for others to return theirs. A model, or one call's models, that alone need more " +
      "than the budget fail the query with an error naming both sizes. A model's TreeSHAP tables keep at most what " +
      "the budget leaves once it is loaded; its other leaves replay, with the same bits, more slowly. `auto`: what `spark.executor.memoryOverhead` leaves after 256 MiB for the JVM and, per task " +
      s"slot, `batch.maxBytes` for its buffers and ${WireLimits.TaskWorkingMemoryBytes >> 20} MiB for its working memory (2 GiB in local mode). Accepts `auto` or byte sizes like `512m`. See " +
      "[tuning.md](tuning.md#sizing-native-memory).",
    (key, raw) => if (raw.trim.equalsIgnoreCase("auto")) None else Some(size("auto, 512m or 2g")(key, raw)))

  val BroadcastThresholdBytes: ConfEntry[Long] = ConfEntry("spark.treescore.broadcast.thresholdBytes", "100m", "query",
    "Models whose text is larger than this reach executors as a Spark broadcast: each executor fetches the model " +
      "once and shares it across its tasks and later queries, instead of receiving it inside every task's plan. " +
      "`0` broadcasts every model. Each executor logs `treescore: model <hash> (<n> bytes) arrived in this JVM " +
      "through a broadcast` once per model. Accepts byte sizes like `100m`.", size("100m or 1048576"))

  /** A family of keys, `spark.treescore.model.<name>`, one per model name registered for SQL. */
  val ModelNames: ConfEntry[String] = ConfEntry("spark.treescore.model.<name>", "", "query",
    "Registers a model name for SQL: the path of a LightGBM text model, an MLflow LightGBM model directory or a " +
      "saved scorer folder, read on the driver when a query first uses `treescore_score('<name>', ...)` and again " +
      "when the file changes. This is how plain SQL and Spark Connect clients register models " +
      "(`SET spark.treescore.model.demand_v3 = /models/demand_v3.txt`); a name registered with `treescore.register` " +
      "takes precedence. See [sql-and-connect.md](sql-and-connect.md).", (_, path) => path)
  /** The key prefix of [[ModelNames]]: `spark.treescore.model.`. */
  val ModelNamePrefix: String = ModelNames.key.stripSuffix("<name>")

  val all: Seq[ConfEntry[_]] = Seq(BatchEnabled, ColumnarEnabled, TopKEnabled, BatchRows, BatchMaxBytes, NativeThreads, EngineChoice, CacheMaxBytes, BroadcastThresholdBytes,
    ModelNames)

  /** The reference table in docs/configuration.md, as it must read. */
  def markdownTable: String = {
    val rows = all.map { e =>
      val default = if (e.default.isEmpty) "none" else s"`${e.default}`"
      val when = if (e.when == "application") " Set at application start." else ""
      s"| `${e.key}` | $default | ${e.doc}$when |"
    }
    ("| key | default | meaning |" +: "|---|---|---|" +: rows).mkString("\n")
  }

  private def boolean(key: String, raw: String): Boolean = raw.trim.toLowerCase match {
    case "true" => true
    case "false" => false
    case _ => throw new IllegalArgumentException(s"$key must be true or false, got '$raw'")
  }

  private def positiveInt(key: String, raw: String): Int =
    Numbers.int(raw.trim).filter(_ > 0).getOrElse(throw new IllegalArgumentException(s"$key must be a positive integer, got '$raw'"))

  private def oneOf(values: String*)(key: String, raw: String): String = {
    val value = raw.trim.toLowerCase
    if (!values.contains(value)) throw new IllegalArgumentException(s"$key must be one of ${values.mkString(", ")}, got '$raw'")
    value
  }

  /** A byte size as Spark writes them (512m, 2g, 1048576), named by `examples` in errors. */
  private def size(examples: String)(key: String, raw: String): Long = {
    val bytes = try JavaUtils.byteStringAsBytes(raw) catch { case _: NumberFormatException => -1L }
    if (bytes < 0) throw new IllegalArgumentException(s"$key must be a size such as $examples, got '$raw'")
    bytes
  }
}
