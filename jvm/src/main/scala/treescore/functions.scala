package treescore

import org.apache.spark.sql.Column
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute
import org.apache.spark.sql.treescore.ColumnBridge

import treescore.expressions.ScoreExpression
import treescore.model.TreeModel

/**
 * treescore's public Scala API.
 *
 * {{{
 *   import treescore.functions._
 *   val model = TreeModel.load("hdfs:///models/churn.txt")
 *   df.withColumn("p", score(model))                           // the model's own feature names
 *   df.withColumn("p", score(model, col("a"), col("b") * 2))   // any numeric expressions
 * }}}
 */
object functions {

  /**
   * The model's prediction (as `lightgbm.Booster.predict` returns it) for the given feature
   * columns, in the model's feature order. Nulls are treated as missing values.
   */
  def score(model: TreeModel, features: Column*): Column =
    ColumnBridge.column(ScoreExpression(model, features.map(ColumnBridge.expression)))

  /** The model's prediction, reading the columns named like the model's features. */
  def score(model: TreeModel): Column =
    score(model, model.featureNames.map(name => ColumnBridge.column(UnresolvedAttribute.quoted(name))): _*)

  /** The model's prediction, reading the named columns, in the model's feature order. */
  def score(model: TreeModel, featureColumns: Array[String]): Column =
    score(model, featureColumns.toSeq.map(name => ColumnBridge.column(UnresolvedAttribute.quoted(name))): _*)
}
