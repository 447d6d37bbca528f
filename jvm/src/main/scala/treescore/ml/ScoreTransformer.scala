package treescore.ml

import org.apache.spark.ml.Transformer
import org.apache.spark.ml.param.ParamMap
import org.apache.spark.ml.util.{DefaultParamsWritable, Identifiable, MLReadable, MLReader, MLWriter}
import org.apache.spark.sql.{AnalysisException, Column, DataFrame, Dataset, Row, SparkSession}
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.treescore.ColumnBridge
import org.apache.spark.sql.types.StructType

import treescore.{functions, ScoreOptions}
import treescore.ensemble.{GridScorer, Scorable, Scorer}
import treescore.model.TreeModel

/**
 * A Spark ML stage that adds a column of treescore scores: a LightGBM model (any kind, any
 * number of classes) or an ensemble, route, cascade or grid scored natively in the batched pass.
 *
 * A model reads `featuresCol` (one vector or array column, e.g. VectorAssembler's output),
 * or `inputCols` (one column per feature, in the model's order), or, with neither set, the
 * columns named like its features. Ensembles, routes, cascades and grids read their inputs by
 * the column names in their spec and return predictions, so they take neither, nor `kind`.
 *
 * Saved stages (alone or inside a Pipeline) hold Spark's params metadata plus either
 * `model/<sha256>.txt` or a `scorer/` folder in treescore's spec format; the Python wrapper
 * (treescore.ml.ScoreTransformer) writes and reads the same files through this class.
 *
 * {{{
 *   val assembler = new VectorAssembler().setInputCols(Array("a", "b", "c")).setOutputCol("features")
 *   val stage = new ScoreTransformer(TreeModel.load("/models/churn.txt")).setFeaturesCol("features").setOutputCol("p")
 *   new Pipeline().setStages(Array(assembler, stage)).fit(df).write.save("/pipelines/churn")
 * }}}
 */
final class ScoreTransformer private (override val uid: String, target: Option[ScoreTarget])
  extends Transformer with ScoreTransformerParams with DefaultParamsWritable {

  def this(uid: String, model: TreeModel) = this(uid, Some(ScoreTarget.Model(model)))
  def this(uid: String, scorable: Scorable) = this(uid, Some(ScoreTarget.Program(scorable)))
  def this(model: TreeModel) = this(Identifiable.randomUID("treescore"), model)
  def this(scorable: Scorable) = this(Identifiable.randomUID("treescore"), scorable)

  /** Only for Spark's params reader, which instantiates a stage by uid before ours adds the scorer. */
  private[ml] def this(uid: String) = this(uid, None)

  def setInputCols(value: Array[String]): this.type = set(inputCols, value)
  def setFeaturesCol(value: String): this.type = set(featuresCol, value)
  def setOutputCol(value: String): this.type = set(outputCol, value)
  def setKind(value: String): this.type = set(kind, value)
  def setStartIteration(value: Int): this.type = set(startIteration, value)
  def setNumIterations(value: Int): this.type = set(numIterations, value)

  /** What this stage scores, e.g. `model(3f1c2a...)` or `route(market: DE -> ...)`. */
  def describe: String = scored.describe

  override def transform(dataset: Dataset[_]): DataFrame = {
    transformSchema(dataset.schema, logging = true)
    dataset.withColumn($(outputCol), scoreColumn)
  }

  /**
   * Checks params and input columns with messages naming them, then lets Spark's analyzer type
   * the score on an empty frame of this schema, so the checks and output type are exactly those
   * of `treescore.functions.score`.
   */
  override def transformSchema(schema: StructType): StructType = {
    val problem = paramProblem.orElse(missingColumns(schema)).orElse(
      if (schema.fieldNames.exists(SQLConf.get.resolver(_, $(outputCol)))) Some(s"the output column '${$(outputCol)}' already exists")
      else None)
    problem.foreach(p => throw new IllegalArgumentException(s"treescore: ScoreTransformer $uid: $p"))
    val session = SparkSession.active
    val empty = session.createDataFrame(java.util.Collections.emptyList[Row](), schema)
    try empty.withColumn($(outputCol), scoreColumn).schema
    catch {
      case e: AnalysisException =>
        throw new IllegalArgumentException(s"treescore: ScoreTransformer $uid cannot score this schema: ${e.getMessage}", e)
    }
  }

  override def copy(extra: ParamMap): ScoreTransformer = copyValues(new ScoreTransformer(uid, target), extra)

  override def write: MLWriter = new ScoreTransformerWriter(this)

  override def toString: String = s"ScoreTransformer: uid=$uid, ${target.map(_.describe).getOrElse("no scorer")}"

  /** Spark's own params writer (metadata/); ScoreTransformerWriter adds the scorer next to it. */
  private[ml] def paramsWriter: MLWriter = super.write

  private[ml] def scored: ScoreTarget = target.getOrElse(throw new IllegalStateException(
    s"treescore: ScoreTransformer $uid has no model or scorer; construct it with one or load a saved stage"))

  private[ml] def withTarget(loaded: ScoreTarget): ScoreTransformer = copyValues(new ScoreTransformer(uid, Some(loaded)))

  private def scoreColumn: Column = scored match {
    case ScoreTarget.Model(model) =>
      val options = ScoreOptions($(kind), $(startIteration), $(numIterations))
      functions.score(model, options, featureColumns(model).map(named): _*)
    case ScoreTarget.Program(scorable) => functions.score(scorable)
  }

  private def featureColumns(model: TreeModel): Seq[String] =
    if (isDefined(featuresCol)) Seq($(featuresCol))
    else if (isDefined(inputCols)) $(inputCols).toSeq
    else model.featureNames

  private def paramProblem: Option[String] = scored match {
    case ScoreTarget.Model(_) =>
      if (isDefined(featuresCol) && isDefined(inputCols)) Some("set either featuresCol or inputCols, not both") else None
    case ScoreTarget.Program(scorable) =>
      val modelOnly = Seq(inputCols.name -> isDefined(inputCols), featuresCol.name -> isDefined(featuresCol),
        kind.name -> ($(kind) != "prediction"), startIteration.name -> ($(startIteration) != 0),
        numIterations.name -> ($(numIterations) > 0)).collect { case (name, true) => name }
      if (modelOnly.isEmpty) None
      else Some(s"${scorable.describe} reads its inputs by the column names in its spec and returns predictions; " +
        s"${modelOnly.mkString(", ")} apply to a single model only")
  }

  private def missingColumns(schema: StructType): Option[String] = {
    val needed = scored match {
      case ScoreTarget.Model(model) => featureColumns(model)
      case ScoreTarget.Program(s: Scorer) => s.featureInputs ++ s.keyInputs
      case ScoreTarget.Program(g: GridScorer) =>
        g.scorer.featureInputs.filterNot(c => g.varied.contains(c) || g.derived.exists(_._1 == c)) ++ g.scorer.keyInputs
    }
    val resolver = SQLConf.get.resolver
    val missing = needed.filterNot(name => schema.fieldNames.exists(resolver(_, name)))
    if (missing.isEmpty) None
    else Some(s"input column${if (missing.length > 1) "s" else ""} ${missing.map(c => s"'$c'").mkString(", ")} " +
      s"not found; the columns are ${schema.fieldNames.mkString(", ")}")
  }

  private def named(column: String): Column = ColumnBridge.column(UnresolvedAttribute.quoted(column))
}

object ScoreTransformer extends MLReadable[ScoreTransformer] {
  override def read: MLReader[ScoreTransformer] = new ScoreTransformerReader
  override def load(path: String): ScoreTransformer = super.load(path)
}

/** What a [[ScoreTransformer]] scores: one model, or a scorer built from several. */
private[ml] sealed trait ScoreTarget extends Serializable {
  def describe: String
}

private[ml] object ScoreTarget {
  final case class Model(model: TreeModel) extends ScoreTarget {
    def describe: String = s"model(${model.contentHash.take(12)})"
  }
  final case class Program(scorable: Scorable) extends ScoreTarget {
    def describe: String = scorable.describe
  }
}
