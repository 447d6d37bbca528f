package treescore.expressions

import scala.util.Try

import org.apache.spark.sql.catalyst.expressions.{Expression, Unevaluable}

import treescore.model.{Engine, PredictKind, TreeModel}
import treescore.nativelib.ModelCache

/**
 * A score call: what to score (a model or a program of models), over which inputs, with which
 * output. BatchScoreExec scores it a batch at a time.
 *
 * Like Spark's PythonUDF, a call is unevaluable while the optimizer works on it, so that no
 * optimizer rule evaluates it on the driver: ConvertToLocalRelation, which folds projections and
 * filters over local data (`createDataFrame(pandas)`, `VALUES`, a Connect client's rows) into new
 * local data, leaves unevaluable expressions alone. treescore's rule batches the calls it can and
 * gives the rest to [[RowScore]]; sessions without treescore's rules are handed RowScores from
 * the start.
 */
trait BatchableScore extends Expression with Unevaluable {
  /** The models this call scores with; the operator ships the large ones before it runs. */
  def models: Seq[TreeModel]

  /** The output kind its models are asked for, which decides the engine that can serve it. */
  def modelKind: PredictKind

  /** The models its scorer leases in `engine`, as the model cache is asked for them. */
  def cacheRequests(engine: Engine): Seq[ModelCache.Request]

  /**
   * Where the executors' model cache cannot hold one of this call's models, however empty it is:
   * the error every task would fail with, raised instead while the driver analyses the call.
   */
  protected def cacheProblem: Option[String] =
    Try(Engine.forCall(models, modelKind)).toOption.flatMap(engine => ModelCache.beyondBudget(cacheRequests(engine)))

  /** Scores per input row: a what-if grid's points, otherwise 1. A batch holds at most batch.rows scores. */
  def pointsPerRow: Int = 1

  /**
   * At most how many doubles of native memory per input row this call holds alone: its task
   * buffers (its outputs, and a program's own inputs and grid values) and the native working
   * memory that grows with the batch (a program's per-row vectors). With [[sharedFeatures]], they
   * bound the rows of a batch (spark.treescore.batch.maxBytes).
   */
  def ownDoublesPerRow: Long

  /** The feature matrix this call reads with every call of the same key, and its width; None where it has its own. */
  def sharedFeatures: Option[(Any, Int)] = None

  /** Scores this call one row at a time, where [[RowScore]] evaluates it. */
  def rowScoring: RowScoring
}
