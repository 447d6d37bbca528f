package treescore.ml

import org.apache.spark.ml.param.{IntParam, Param, ParamValidators, Params, StringArrayParam}

import treescore.model.PredictKind

/**
 * The params of [[ScoreTransformer]]. Spark's shared HasInputCols/HasOutputCol traits are
 * private to Spark, so they are declared here with the same names, which the Python wrapper
 * (treescore.ml.ScoreTransformer) mirrors.
 */
trait ScoreTransformerParams extends Params {

  /** The feature columns, one per model feature in the model's order. Unset: the model's own feature names. */
  final val inputCols: StringArrayParam = new StringArrayParam(this, "inputCols",
    "feature columns, one per model feature in the model's order (default: columns named like the model's features)")

  /** One Spark ML Vector or array<float|double> column holding every feature. */
  final val featuresCol: Param[String] = new Param[String](this, "featuresCol",
    "one vector or array<float|double> column holding every feature (instead of inputCols)")

  final val outputCol: Param[String] = new Param[String](this, "outputCol", "the output column")

  final val kind: Param[String] = new Param[String](this, "kind",
    s"what a model returns: ${PredictKind.all.map(_.name).mkString(", ")}",
    ParamValidators.inArray(PredictKind.all.map(_.name).toArray))

  final val startIteration: IntParam = new IntParam(this, "startIteration",
    "the first boosting iteration used (model only)", ParamValidators.gtEq(0))

  final val numIterations: IntParam = new IntParam(this, "numIterations",
    "how many boosting iterations from startIteration; -1 or 0 means all (model only)")

  setDefault(outputCol -> "score", kind -> "prediction", startIteration -> 0, numIterations -> -1)

  final def getInputCols: Array[String] = $(inputCols)
  final def getFeaturesCol: String = $(featuresCol)
  final def getOutputCol: String = $(outputCol)
  final def getKind: String = $(kind)
  final def getStartIteration: Int = $(startIteration)
  final def getNumIterations: Int = $(numIterations)
}
