package org.apache.spark.sql.treescore

import org.apache.spark.sql.AnalysisException

/**
 * An analysis error with treescore's own message (naming the model, file or argument).
 * Spark's constructor that takes a plain message is protected, so treescore subclasses it;
 * callers still catch it, in Scala, Python and Spark Connect clients, as an AnalysisException.
 */
final class TreescoreAnalysisException(message: String, cause: Option[Throwable])
  extends AnalysisException(message, None, None, cause, None, Map.empty[String, String], Array.empty)

object SqlErrors {
  def analysis(message: String, cause: Option[Throwable] = None): AnalysisException =
    new TreescoreAnalysisException(message, cause)
}
