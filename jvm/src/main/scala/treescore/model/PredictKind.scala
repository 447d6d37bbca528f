package treescore.model

import org.apache.spark.sql.types.{ArrayType, DataType, DoubleType, IntegerType}

import treescore.wire.WireCodes

/**
 * What a prediction returns. The codes are wire/codes.txt's (LightGBM's C_API_PREDICT_* values);
 * the names are the ones users pass as `kind`.
 */
sealed abstract class PredictKind(val code: Int) extends Serializable {
  val name: String = WireCodes.PredictKind.names(code)
  /** The Spark type of one row's result for a model with `numClasses` classes. */
  def dataType(numClasses: Int): DataType
}

object PredictKind {
  /** LightGBM's transformed output, as Booster.predict gives it by default. */
  case object Prediction extends PredictKind(WireCodes.PredictKind.Prediction) {
    def dataType(numClasses: Int): DataType = if (numClasses > 1) ArrayType(DoubleType, false) else DoubleType
  }
  /** The raw score, before the objective's transform. */
  case object Raw extends PredictKind(WireCodes.PredictKind.Raw) {
    def dataType(numClasses: Int): DataType = if (numClasses > 1) ArrayType(DoubleType, false) else DoubleType
  }
  /** The leaf index reached in every tree. */
  case object Leaf extends PredictKind(WireCodes.PredictKind.Leaf) {
    def dataType(numClasses: Int): DataType = ArrayType(IntegerType, false)
  }
  /** SHAP contributions: num_features + 1 values (the last is the bias) per class. */
  case object Contrib extends PredictKind(WireCodes.PredictKind.Contrib) {
    def dataType(numClasses: Int): DataType = ArrayType(DoubleType, false)
  }

  val all: Seq[PredictKind] = Seq(Prediction, Raw, Leaf, Contrib)

  def fromName(name: String): PredictKind = all.find(_.name == name).getOrElse(
    throw new IllegalArgumentException(
      s"treescore: unknown score kind '$name'; expected one of ${all.map(_.name).mkString(", ")}"))
}
