package treescore

import org.apache.spark.sql.{SparkSession, SparkSessionExtensions}
import org.apache.spark.sql.treescore.SessionRules

import treescore.rules.{BatchScoreStrategy, ColumnarScoreInput, ExtractScoreCalls, InferTopKSelection}
import treescore.sql.SqlFunctions

/**
 * Enables treescore's batched scoring:
 * `spark.sql.extensions=treescore.TreescoreExtensions`.
 * Without it, score calls still work, evaluated one row at a time.
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
   * given (`spark.sql.extensions`, `withExtensions`), build ExtractScoreCalls.
   */
  def installedIn(session: SparkSession): Boolean =
    SessionRules.preCBO(session).exists(_.isInstanceOf[ExtractScoreCalls])
}
