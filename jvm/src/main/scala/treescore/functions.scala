package treescore

import org.apache.spark.sql.Column
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute
import org.apache.spark.sql.treescore.ColumnBridge

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Expression

import treescore.ensemble.{Contributions, GridAxis, GridScorer, ModelScorer, Monotone, Scorable, Scorer}
import treescore.execution.TaskScorers
import treescore.expressions.{BatchableScore, GridPoints, GridValue, ProgramScoreExpression, RowScore, ScoreExpression}
import treescore.model.{IterationRange, PredictKind, TreeModel}

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
    val args = if (features.isEmpty) {
      model.requireUniqueFeatureNames("pass one column per feature, in the model's order")
      byName(model, model.featureNames)
    } else features
    column(ScoreExpression(model, args.map(ColumnBridge.expression), options, TaskScorers))
  }

  /** The model's prediction, reading the columns named like the model's features. */
  def score(model: TreeModel): Column = score(model, ScoreOptions.Default)

  /** The model's prediction, reading the named columns, in the model's feature order. */
  def score(model: TreeModel, featureColumns: Array[String]): Column =
    score(model, ScoreOptions.Default, byName(model, featureColumns.toSeq): _*)

  /**
   * Scores an ensemble, route, cascade or grid (see [[treescore.ensemble]]) natively in the
   * batched pass. Inputs are read from the columns named like the scorer's inputs. A
   * [[GridScorer]] returns array<double>, one score per grid point; the others a double.
   *
   * {{{
   *   val demand = EnsembleScorer(Seq(Member(ModelScorer(a), 0.5), Member(ModelScorer(b), 0.5)),
   *     transforms = Seq(OutputTransform.Expm1, OutputTransform.Clip(0, Double.PositiveInfinity)))
   *   df.withColumn("units", score(demand))
   * }}}
   */
  def score(scorable: Scorable): Column = score(scorable, ScoreOptions.Default)

  /**
   * An ensemble, route, cascade or grid with `options.kind` "prediction" (as above) or
   * "contrib": per row (per grid point for a grid) its exact SHAP values in the raw (link)
   * space, array<double> with one value per input in `featureInputs` order and the expected
   * value last. Refused, naming why, where the combination is not linear
   * ([[treescore.ensemble.Contributions]]).
   *
   * {{{ df.withColumn("why", score(demand, ScoreOptions(kind = "contrib"))) }}}
   */
  def score(scorable: Scorable, options: ScoreOptions): Column = {
    val contributions = options.predictKind match {
      case PredictKind.Prediction => false
      case PredictKind.Contrib => true
      case other => throw new IllegalArgumentException(s"treescore: ${scorable.describe} scores kind prediction or " +
        s"contrib, not ${other.name}")
    }
    if (options.iterations != IterationRange.All) {
      throw new IllegalArgumentException(s"treescore: ${scorable.describe} scores all iterations of its models; " +
        "pass no start or number of iterations")
    }
    if (contributions) Contributions.requireExact(scorable)
    scoreScorable(scorable, contributions)
  }

  private def scoreScorable(scorable: Scorable, contributions: Boolean): Column = scorable match {
    case scorer: Scorer => program(scorer, None, Map.empty, contributions)
    case grid: GridScorer =>
      val parser = SparkSession.active.sessionState.sqlParser
      val varied = grid.varied.map(name => name -> GridValue(name)).toMap
      val derived = grid.derived.map { case (name, sql) =>
        name -> parser.parseExpression(sql).transform {
          case a: UnresolvedAttribute if a.nameParts.length == 1 && varied.contains(a.nameParts.head) => varied(a.nameParts.head)
        }
      }.toMap
      program(grid.scorer, Some(GridPoints(grid.axes, grid.monotone)), derived ++ varied, contributions)
  }

  /**
   * What-if scoring: `scorable` at every value of the input `vary`, as array<double>.
   * `derived` inputs are SQL expressions recomputed at every grid point, reading the grid
   * value by the name `vary`; `monotone` is "none", "increasing" or "decreasing".
   *
   * {{{
   *   df.withColumn("curve", scoreGrid(demand, "discount", (0 to 14).map(_ * 0.05),
   *     Map("price_after" -> "price * (1 - discount)"), "decreasing"))
   * }}}
   */
  def scoreGrid(scorable: Scorable, vary: String, values: Seq[Double], derived: Map[String, String] = Map.empty,
      monotone: String = "none"): Column = scoreGridOver(scorable, Seq(GridAxis(vary, values)), derived, monotone)

  /**
   * What-if scoring over several inputs at once: the cross product of `axes`, the first axis
   * varying slowest, as array<double>; a monotone curve runs along the last axis.
   *
   * {{{
   *   df.withColumn("surface", scoreGridOver(demand, Seq(GridAxis("discount", Seq(0.0, 0.1, 0.2)),
   *     GridAxis("shipping", Seq(0.0, 4.99)))))
   * }}}
   */
  def scoreGridOver(scorable: Scorable, axes: Seq[GridAxis], derived: Map[String, String] = Map.empty,
      monotone: String = "none"): Column = {
    val scorer = scorable match {
      case s: Scorer => s
      case g: GridScorer => throw new IllegalArgumentException(s"treescore: a grid cannot vary another grid (${g.describe})")
    }
    score(GridScorer(scorer, axes, derived.toSeq.sortBy(_._1), Monotone.fromName(monotone)))
  }

  /** What-if scoring of a single model; see the Scorable overload. */
  def scoreGrid(model: TreeModel, vary: String, values: Seq[Double], derived: Map[String, String],
      monotone: String): Column = scoreGrid(ModelScorer(model), vary, values, derived, monotone)

  private def program(scorer: Scorer, grid: Option[GridPoints], computed: Map[String, Expression],
      contributions: Boolean): Column = {
    val features = scorer.featureInputs.map(name => computed.getOrElse(name, UnresolvedAttribute.quoted(name)))
    val keys = scorer.keyInputs.map(UnresolvedAttribute.quoted)
    column(ProgramScoreExpression(scorer, scorer.featureInputs, scorer.keyInputs, grid, features ++ keys,
      TaskScorers, contributions))
  }

  /**
   * A call as a column: batchable where the active session has treescore's rules, which batch it,
   * else one row at a time, since nothing else could evaluate it, with a warning once per session.
   */
  private def column(call: BatchableScore): Column = {
    val session = SparkSession.getActiveSession.orElse(SparkSession.getDefaultSession)
    if (session.exists(TreescoreExtensions.installedIn)) ColumnBridge.column(call)
    else {
      session.foreach(TreescoreExtensions.warnOnceWithout)
      ColumnBridge.column(RowScore(call))
    }
  }

  private def byName(model: TreeModel, names: Seq[String]): Seq[Column] =
    names.map(name => ColumnBridge.column(UnresolvedAttribute.quoted(name)))
}
