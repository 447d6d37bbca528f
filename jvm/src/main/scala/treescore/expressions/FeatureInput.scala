package treescore.expressions

import scala.annotation.switch

import org.apache.spark.SparkException
import org.apache.spark.ml.attribute.AttributeGroup
import org.apache.spark.ml.linalg.SQLDataTypes.VectorType
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, BoundReference, Cast, CreateArray, Expression, MutableProjection}
import org.apache.spark.sql.types.{ArrayType, BooleanType, ByteType, DataType, DoubleType, FloatType, IntegerType, LongType,
  NumericType, ShortType, StructField}

import treescore.model.TreeModel

/**
 * How a score call's features arrive: one numeric column per feature, or all of them in one
 * Spark ML Vector or one array<float>/array<double> column. Decided from the argument types.
 */
sealed trait FeatureInput extends Serializable {
  /** An analysis-time problem with these arguments for this model, if any. */
  def problem(args: Seq[Expression], model: TreeModel): Option[String]
}

object FeatureInput {
  def of(args: Seq[Expression]): FeatureInput = args match {
    case Seq(single) if single.dataType == VectorType => VectorColumn
    case Seq(single) if single.dataType.isInstanceOf[ArrayType] => ArrayColumn
    case _ => ScalarColumns
  }

  def isScalarFeatureType(t: DataType): Boolean = t.isInstanceOf[NumericType] || t == BooleanType

  /** One numeric or boolean column per feature, in the model's order. */
  case object ScalarColumns extends FeatureInput {
    def problem(args: Seq[Expression], model: TreeModel): Option[String] =
      if (args.length != model.numFeatures) {
        Some(s"the model expects ${model.numFeatures} feature columns " +
          s"(${ScoreExpression.listed(model.featureNames)}) but ${args.length} were given")
      } else {
        args.zip(model.featureNames).collectFirst {
          case (arg, feature) if !isScalarFeatureType(arg.dataType) =>
            s"the column ${arg.sql} given for feature '$feature' has type ${arg.dataType.simpleString}; " +
              "expected a numeric or boolean column, or a single vector or array<float|double> column holding every feature"
        }
      }
  }

  /** Sizes a vector or array argument declares before any row is read, where it declares one. */
  private def declaredSize(arg: Expression): Option[Int] = arg match {
    case a: Attribute if a.dataType == VectorType => // Spark ML's ml_attr metadata, when present
      Some(AttributeGroup.fromStructField(StructField(a.name, a.dataType, a.nullable, a.metadata)).size).filter(_ >= 0)
    case c: CreateArray => Some(c.children.length)
    case _ => None
  }

  private def sizeProblem(arg: Expression, model: TreeModel, what: String): Option[String] =
    declaredSize(arg).filter(_ != model.numFeatures).map(size =>
      s"the $what ${arg.sql} holds $size features but the model expects ${model.numFeatures} " +
        s"(${ScoreExpression.listed(model.featureNames)})")

  /** A Spark ML Vector (dense or sparse) holding every feature; absent sparse entries are 0. */
  case object VectorColumn extends FeatureInput {
    def problem(args: Seq[Expression], model: TreeModel): Option[String] = sizeProblem(args.head, model, "vector column")
  }

  /** An array<float> or array<double> holding every feature; a null element is missing. */
  case object ArrayColumn extends FeatureInput {
    def problem(args: Seq[Expression], model: TreeModel): Option[String] = args.head.dataType match {
      case ArrayType(FloatType | DoubleType, _) => sizeProblem(args.head, model, "array column")
      case other =>
        Some(s"the array column ${args.head.sql} has type ${other.simpleString}; expected array<float> or array<double>")
    }
  }
}
