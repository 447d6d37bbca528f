package treescore.expressions

import org.apache.spark.sql.catalyst.analysis.TypeCheckResult
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.types.DataType

import treescore.ScoreOptions
import scala.util.{Failure, Success, Try}

import treescore.model.{Engine, PredictKind, TreeModel}
import treescore.nativelib.ModelCache

/**
 * `score(model, features...)`: a LightGBM prediction over feature columns, a Spark ML vector
 * column or an array column (see [[FeatureInput]]).
 *
 * Analysis checks the features against the model on the driver. With treescore's extensions
 * enabled, ExtractScoreCalls moves every score call it can into one batched operator
 * ([[treescore.execution.BatchScoreExec]]); [[RowScore]] scores the others one row at a time,
 * with the same scores. A null feature is NaN, which is
 * LightGBM's missing value.
 */
case class ScoreExpression(model: TreeModel, children: Seq[Expression], options: ScoreOptions,
    rowScoring: RowScoring) extends BatchableScore {

  override def models: Seq[TreeModel] = Seq(model)
  override def modelKind: PredictKind = options.predictKind
  override def cacheRequests(engine: Engine): Seq[ModelCache.Request] =
    Seq(ModelCache.Request(model, options.iterations, engine, options.predictKind))

  /** Calls of models with as many features over the same columns read one matrix per task. */
  override def sharedFeatures: Option[(Any, Int)] = Some(((children.map(_.canonicalized), model.numFeatures), model.numFeatures))

  /** Its outputs: each engine scores a model's rows into them with no per-row working memory. */
  override def ownDoublesPerRow: Long = options.predictKind match {
    case PredictKind.Leaf => model.numTrees.toLong
    case PredictKind.Contrib => (model.numFeatures + 1L) * model.numClasses
    case _ => model.numClasses.toLong
  }
  override def dataType: DataType = options.predictKind.dataType(model.numClasses)
  override def nullable: Boolean = false
  override def prettyName: String = "treescore_score"

  @transient lazy val input: FeatureInput = FeatureInput.of(children)

  override def checkInputDataTypes(): TypeCheckResult = {
    val iterationProblem =
      if (options.startIteration >= model.numIterations) {
        Some(s"startIteration ${options.startIteration} is past the model's last iteration (${model.numIterations - 1})")
      } else None
    // spark.treescore.engine=treescore with an output the engine cannot give fails here, on the driver.
    val engineProblem = Try(Engine.forCall(models, options.predictKind)) match {
      case Failure(e) => Some(e.getMessage.stripPrefix("treescore: "))
      case Success(_) => None
    }
    val problem = iterationProblem.orElse(engineProblem).orElse(input.problem(children, model))
      .orElse(cacheProblem.map(_.stripPrefix("treescore: ")))
    problem match {
      case Some(problem) => TypeCheckResult.TypeCheckFailure(s"treescore: $problem")
      case None => TypeCheckResult.TypeCheckSuccess
    }
  }

  private def optionsString: String =
    if (options == ScoreOptions.Default) "" else s", ${options.kind}, ${options.iterations}"

  override def toString: String =
    s"$prettyName(${model.contentHash.take(12)}$optionsString, ${ScoreExpression.listed(children.map(_.toString))})"

  override def sql: String =
    s"$prettyName('${model.contentHash.take(12)}'$optionsString, ${children.map(_.sql).mkString(", ")})"

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): ScoreExpression =
    copy(children = newChildren)
}

object ScoreExpression {
  /** Names for messages and plans: long lists are shortened. */
  def listed(names: Seq[String], shown: Int = 8): String =
    if (names.length <= shown) names.mkString(", ")
    else names.take(shown).mkString(", ") + s", ... ${names.length - shown} more"
}
