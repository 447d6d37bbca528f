package treescore.expressions

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.analysis.TypeCheckResult
import org.apache.spark.sql.catalyst.expressions.{Cast, Expression}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.types.{BooleanType, DataType, DoubleType, NumericType}

import treescore.model.{ModelCache, OffHeapDoubles, PredictKind, TreeModel}

/**
 * `score(model, features...)`: a LightGBM prediction over feature columns.
 *
 * Analysis checks the feature count and types against the model on the driver. With
 * treescore's extensions enabled, ExtractScoreCalls moves every score call into one batched
 * operator ([[treescore.execution.BatchScoreExec]]); `eval` is the row-at-a-time fallback for
 * plans that rule does not rewrite, and gives the same scores. A null feature is NaN, which is
 * LightGBM's missing value.
 */
case class ScoreExpression(model: TreeModel, children: Seq[Expression])
  extends Expression with CodegenFallback {

  override def dataType: DataType = DoubleType
  override def nullable: Boolean = false
  override def prettyName: String = "treescore_score"

  override def checkInputDataTypes(): TypeCheckResult = {
    if (children.length != model.numFeatures) {
      TypeCheckResult.TypeCheckFailure(
        s"treescore: the model expects ${model.numFeatures} feature columns " +
          s"(${ScoreExpression.listed(model.featureNames)}) but ${children.length} were given")
    } else {
      children.zip(model.featureNames).collectFirst {
        case (child, feature) if !ScoreExpression.isFeatureType(child.dataType) =>
          TypeCheckResult.TypeCheckFailure(
            s"treescore: the column ${child.sql} given for feature '$feature' has type " +
              s"${child.dataType.simpleString}; expected a numeric or boolean column")
      }.getOrElse(TypeCheckResult.TypeCheckSuccess)
    }
  }

  /** The features as doubles, in the model's order; what both evaluation paths read. */
  @transient lazy val featuresAsDoubles: Seq[Expression] =
    children.map(c => if (c.dataType == DoubleType) c else Cast(c, DoubleType))

  override def eval(input: InternalRow): Any = {
    val (native, _) = ModelCache.get(model)
    val features = new OffHeapDoubles(children.length)
    val out = new OffHeapDoubles(native.outputsPerRow(PredictKind.Prediction))
    try {
      var j = 0
      featuresAsDoubles.foreach { feature =>
        val value = feature.eval(input)
        features.put(j, if (value == null) Double.NaN else value.asInstanceOf[Double])
        j += 1
      }
      native.predict(features, 1, PredictKind.Prediction, numThreads = 1, out)
      out.get(0)
    } finally {
      features.close()
      out.close()
    }
  }

  override def toString: String =
    s"$prettyName(${model.contentHash.take(12)}, ${ScoreExpression.listed(children.map(_.toString))})"

  override def sql: String = s"$prettyName('${model.contentHash.take(12)}', ${children.map(_.sql).mkString(", ")})"

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): ScoreExpression =
    copy(children = newChildren)
}

object ScoreExpression {
  def isFeatureType(t: DataType): Boolean = t.isInstanceOf[NumericType] || t == BooleanType

  /** Names for messages and plans: long feature lists are shortened. */
  def listed(names: Seq[String], shown: Int = 8): String =
    if (names.length <= shown) names.mkString(", ")
    else names.take(shown).mkString(", ") + s", ... ${names.length - shown} more"
}
