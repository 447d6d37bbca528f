package treescore

import org.apache.spark.sql.Column
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute
import org.apache.spark.sql.treescore.ColumnBridge

import treescore.expressions.ScoreExpression
import treescore.model.TreeModel

/**
 * treescore's public Scala API; the Python functions of the same names mirror it.
 *
 * {{{
 *   import treescore.functions._
 *   val model = TreeModel.load("hdfs:///models/churn.txt")
 *   df.withColumn("p", score(model))                                  // the model's own feature names
 *   df.withColumn("p", score(model, col("a"), col("b") * 2))          // any numeric expressions
 *   df.withColumn("p", score(model, col("features")))                 // one ML Vector or array column
 *   df.withColumn("shap", score(model, ScoreOptions(kind = "contrib"), col("features")))
 * }}}
 */
object functions {

  /**
   * The model's prediction, as `lightgbm.Booster.predict` returns it, for the given features:
   * one numeric or boolean column per feature in the model's order, or a single Spark ML Vector
   * or array<float|double> column holding them all. Nulls are missing values.
   *
   * {{{ df.withColumn("p", score(model, col("age"), col("income") / 1000)) }}}
   */
  def score(model: TreeModel, features: Column*): Column = score(model, ScoreOptions.Default, features: _*)

  /**
   * The model's output of the kind and iterations `options` asks for.
   *
   * {{{ df.withColumn("leaves", score(model, ScoreOptions(kind = "leaf"), col("features"))) }}}
   */
  def score(model: TreeModel, options: ScoreOptions, features: Column*): Column = {
    val args = if (features.isEmpty) byName(model, model.featureNames) else features
    ColumnBridge.column(ScoreExpression(model, args.map(ColumnBridge.expression), options))
  }

  /** The model's prediction, reading the columns named like the model's features. */
  def score(model: TreeModel): Column = score(model, ScoreOptions.Default)

  /** The model's prediction, reading the named columns, in the model's feature order. */
  def score(model: TreeModel, featureColumns: Array[String]): Column =
    score(model, ScoreOptions.Default, byName(model, featureColumns.toSeq): _*)

  private def byName(model: TreeModel, names: Seq[String]): Seq[Column] =
    names.map(name => ColumnBridge.column(UnresolvedAttribute.quoted(name)))
}
