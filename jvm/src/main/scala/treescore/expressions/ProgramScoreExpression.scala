package treescore.expressions

import org.apache.spark.sql.catalyst.analysis.TypeCheckResult
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.types.{ArrayType, BooleanType, DataType, DoubleType, NumericType, StringType}

import treescore.ensemble.{GridAxis, Monotone, ProgramWorkingMemory, Scorer}
import treescore.model.{Engine, IterationRange, PredictKind, TreeModel}
import treescore.nativelib.ModelCache

/**
 * A what-if grid's axes and curve constraint. Its points are the axes' cross product, the first
 * axis varying slowest; a monotone curve runs along the last axis (runs of `run` points).
 */
final case class GridPoints(axes: Seq[GridAxis], monotone: Monotone) {
  def size: Int = axes.map(_.values.length).product
  def run: Int = axes.last.values.length
  /** Each axis's value at every point: valuesAt(point)(axis). */
  def valuesAt: Array[Array[Double]] = Array.tabulate(size) { point =>
    var rest = point
    axes.reverse.map { axis =>
      val value = axis.values(rest % axis.values.length)
      rest /= axis.values.length
      value
    }.reverse.toArray
  }
  def describe: String = s"grid of ${axes.map(_.values.length).mkString(" x ")}" +
    (if (monotone == Monotone.None) "" else " " + monotone.name)
}

/**
 * `score(ensemble | route | cascade | grid)`: a [[Scorer]] evaluated natively over each batch.
 * `children` are the scorer's numeric inputs (named `featureInputs`, in that order) followed
 * by its routing keys (`keyInputs`). For a grid, inputs may read [[GridValue]]; the result is
 * array<double>, one score per grid point. With `contributions`, each score is replaced by its
 * SHAP values in the raw space (array<double>: one per feature input, in order, then the
 * expected value; see [[treescore.ensemble.Contributions]]).
 */
case class ProgramScoreExpression(scorer: Scorer, featureInputs: Seq[String], keyInputs: Seq[String],
    grid: Option[GridPoints], children: Seq[Expression], rowScoring: RowScoring, contributions: Boolean = false)
  extends BatchableScore {

  override def models: Seq[TreeModel] = scorer.models
  /** Members give one prediction or raw score per row, which every engine serves; TreeSHAP only LightGBM's. */
  override def modelKind: PredictKind = if (contributions) PredictKind.Contrib else PredictKind.Prediction
  override def cacheRequests(engine: Engine): Seq[ModelCache.Request] =
    models.map(ModelCache.Request(_, IterationRange.All, engine, modelKind))
  override def pointsPerRow: Int = grid.map(_.size).getOrElse(1)
  /** Doubles per grid point: one score, or the contributions of every input and the expected value. */
  def valuesPerPoint: Int = if (contributions) featureInputs.length + 1 else 1

  /**
   * Its inputs; per point the varying inputs' values, its route indices (int32, counted as
   * doubles), its results and the program's working memory.
   */
  override def ownDoublesPerRow: Long = {
    val varying = children.take(featureInputs.length).count(_.find(_.isInstanceOf[GridValue]).isDefined)
    val working = ProgramWorkingMemory.doublesPerRow(scorer, varying, featureInputs.length + 1, contributions)
    featureInputs.length + pointsPerRow.toLong * (varying + keyInputs.length + valuesPerPoint + working)
  }
  private def pointType: DataType = if (contributions) ArrayType(DoubleType, false) else DoubleType
  override def dataType: DataType = if (grid.isDefined) ArrayType(pointType, scorer.nullable) else pointType
  override def nullable: Boolean = grid.isEmpty && scorer.nullable
  override def prettyName: String = "treescore_score"

  override def checkInputDataTypes(): TypeCheckResult = {
    val numeric = children.take(featureInputs.length).zip(featureInputs).collectFirst {
      case (c, name) if !FeatureInput.isScalarFeatureType(c.dataType) =>
        s"treescore: the input '$name' (${c.sql}) has type ${c.dataType.simpleString}; expected a numeric or boolean column"
    }
    val keys = children.drop(featureInputs.length).zip(keyInputs).collectFirst {
      case (c, name) if !(c.dataType.isInstanceOf[StringType] || c.dataType.isInstanceOf[NumericType] || c.dataType == BooleanType) =>
        s"treescore: the routing key '$name' has type ${c.dataType.simpleString}; expected a string, number or boolean"
    }
    numeric.orElse(keys).orElse(cacheProblem).map(TypeCheckResult.TypeCheckFailure).getOrElse(TypeCheckResult.TypeCheckSuccess)
  }

  override def toString: String = {
    val gridPart = grid.map(g => s", ${g.describe}").getOrElse("")
    val kindPart = if (contributions) ", contrib" else ""
    s"$prettyName(${scorer.describe}$gridPart$kindPart, ${ScoreExpression.listed(children.map(_.toString))})"
  }

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): ProgramScoreExpression =
    copy(children = newChildren)
}
