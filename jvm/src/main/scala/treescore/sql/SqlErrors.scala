package treescore.sql

import org.apache.spark.sql.AnalysisException

object SqlErrors {
  /**
   * An AnalysisException carrying treescore's own message (naming the model, file or argument).
   * Spark only builds them from its registered error conditions, and PySpark formats them by
   * condition, so the message travels in the condition Spark keeps for a plain message.
   */
  def analysis(message: String, cause: Option[Throwable] = None): AnalysisException =
    new AnalysisException("_LEGACY_ERROR_TEMP_1332", Map("errorMessage" -> message), cause)
}
