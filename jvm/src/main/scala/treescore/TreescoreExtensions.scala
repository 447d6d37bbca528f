package treescore

import org.apache.spark.sql.{SparkSession, SparkSessionExtensions}
import org.apache.spark.sql.treescore.SessionRules
import org.slf4j.LoggerFactory

import treescore.rules.{BatchScoreStrategy, ColumnarScoreInput, ExtractScoreCalls, InferTopKSelection}
import treescore.sql.SqlFunctions

/**
 * Enables treescore's batched scoring:
 * `spark.sql.extensions=treescore.TreescoreExtensions`.
 * Without it, score calls still work, evaluated one row at a time (with a warning, once per
 * session); [[TreescoreExtensions.enable]] gives a running session the rules.
 */
class TreescoreExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    // Moves score calls into BatchScore nodes once Spark's own operator optimizations have
    // settled, the point where Spark itself extracts Python UDFs, so no later pushdown or
    // pruning rule has to understand the new node.
    extensions.injectPreCBORule(session => ExtractScoreCalls(session))
    // Then tells a BatchScore under a top-K query (ORDER BY score LIMIT k, rank() <= k) which
    // rows it may leave unscored.
    extensions.injectPreCBORule(session => InferTopKSelection(session))
    // Plans each BatchScore node as the batched physical operator, BatchScoreExec.
    extensions.injectPlannerStrategy(_ => BatchScoreStrategy)
    // Over a columnar child (Parquet, ORC, the columnar cache), reads the column vectors directly.
    extensions.injectColumnar(_ => ColumnarScoreInput)
    // treescore_score(...) and friends for SQL and Spark Connect clients (treescore.sql).
    SqlFunctions.all.foreach(extensions.injectFunction(_))
  }
}

object TreescoreExtensions {
  /**
   * Whether queries of `session` batch score calls: whether its extensions, however they were
   * given (`spark.sql.extensions`, `withExtensions`), or [[enable]] built ExtractScoreCalls.
   */
  def installedIn(session: SparkSession): Boolean =
    (SessionRules.preCBO(session) ++ SessionRules.extraOptimizations(session)).exists(_.isInstanceOf[ExtractScoreCalls])

  /**
   * Gives a session that is already running treescore's rules, strategy and SQL functions, as
   * the extensions give a session at its start; returns false, doing nothing, if it has them.
   *
   * A running session takes rules only through `experimental`: the score rules then run in the
   * optimizer's last batch rather than before cost-based optimization, which changes where calls
   * are batched in no plan the tests know of. Columnar rules cannot be added at all, so a score
   * over Parquet, ORC or the columnar cache reads rows rather than column vectors: the same bits,
   * at the speed of the row path (docs/tuning.md). Start the session with the extensions for that.
   */
  def enable(session: SparkSession): Boolean = synchronized {
    if (installedIn(session)) false
    else {
      val injected = new SparkSessionExtensions
      new TreescoreExtensions()(injected)
      SessionRules.addToRunning(session, injected)
      true
    }
  }

  /** What a session without treescore's rules costs, and the fixes; Python warns with it too. */
  val missingMessage: String =
    "treescore: this session does not have treescore's extensions, so score calls run one row at a " +
      "time, several times slower than in batches, and never read column vectors. Start the session with " +
      "spark.sql.extensions=treescore.TreescoreExtensions (Python: treescore.configure(builder)), or give " +
      "the running session the rules: treescore.enable(spark) in Python, TreescoreExtensions.enable(spark) in Scala."

  private val warned = java.util.Collections.synchronizedMap(new java.util.WeakHashMap[SparkSession, java.lang.Boolean])

  /** Logs [[missingMessage]] the first time a session without the rules builds a score call. */
  private[treescore] def warnOnceWithout(session: SparkSession): Unit =
    if (warned.put(session, true) == null) LoggerFactory.getLogger(getClass.getName.stripSuffix("$")).warn(missingMessage)
}
