package treescore.ensemble

import treescore.model.TreeModel
import treescore.wire.WireCodes

/** Anything `score` accepts besides a plain model: a [[Scorer]] (one double per row) or a [[GridScorer]]. */
sealed trait Scorable extends Serializable {
  def describe: String
  /** The numeric inputs read, distinct, in first-use order: the order contributions list them in. */
  def featureInputs: Seq[String]
  /** featureInputs for Python (py4j). */
  def featureInputsArray: Array[String] = featureInputs.toArray
}

/**
 * Something `score` can evaluate into one double per row: a model, or a combination of
 * scorers evaluated natively in the same batched pass (see native/src/program/program.h).
 *
 * Every scorer reads named numeric inputs (columns, by default named like model features)
 * and, for routing, named key columns. Nesting is free: ensembles of routes of cascades...
 */
sealed trait Scorer extends Scorable {
  /** The key columns routing reads, distinct, in first-use order. */
  def keyInputs: Seq[String]
  /** The distinct models inside, in first-use order. */
  def models: Seq[TreeModel]
  /** Whether some row may score null (a route with no model for a key, set to give null). */
  def nullable: Boolean
  /** A short description for plans and messages. */
  def describe: String
  /** The numeric inputs some model splits on (or reads in a linear leaf): no score depends on the others. */
  def inputsRead: Set[String]
}

object Scorer {
  private[ensemble] def distinct[T](parts: Seq[Seq[T]]): Seq[T] = parts.flatten.distinct

  private[ensemble] def invalid(problem: String): Nothing =
    throw new IllegalArgumentException(s"treescore: $problem")
}

/**
 * One model; `columns` names the input read for each model feature (its own feature names by
 * default), which lets members of one ensemble read different columns for the same feature.
 * `raw` scores the raw margin instead of the transformed prediction.
 */
final case class ModelScorer(model: TreeModel, columns: Seq[String], raw: Boolean = false) extends Scorer {
  if (columns.length != model.numFeatures) {
    Scorer.invalid(s"model ${model.contentHash.take(12)} has ${model.numFeatures} features " +
      s"but its column mapping names ${columns.length} columns")
  }
  if (model.numClasses != 1) {
    Scorer.invalid(s"model ${model.contentHash.take(12)} has ${model.numClasses} classes; ensembles, routes, " +
      "grids and cascades combine single-output models")
  }
  def featureInputs: Seq[String] = columns.distinct
  def keyInputs: Seq[String] = Nil
  def models: Seq[TreeModel] = Seq(model)
  def nullable: Boolean = false
  def describe: String = s"model(${model.contentHash.take(12)}${if (raw) ", raw" else ""})"
  def inputsRead: Set[String] = columns.indices.filter(model.readsFeature).map(columns).toSet
}

object ModelScorer {
  def apply(model: TreeModel): ModelScorer = {
    model.requireUniqueFeatureNames(renameAdvice)
    ModelScorer(model, model.featureNames)
  }

  private val renameAdvice = "give the features distinct names in the model file (feature_names=...)"

  /** The model reading `renamed(feature)` instead of `feature` where given. */
  def withColumns(model: TreeModel, renamed: Map[String, String], raw: Boolean): ModelScorer = {
    val unknown = renamed.keySet -- model.featureNames
    if (unknown.nonEmpty) {
      Scorer.invalid(s"the column mapping names ${unknown.toSeq.sorted.mkString(", ")}, which model " +
        s"${model.contentHash.take(12)} does not have as features")
    }
    model.requireUniqueFeatureNames(renameAdvice)
    ModelScorer(model, model.featureNames.map(f => renamed.getOrElse(f, f)), raw)
  }
}

/** A member of an ensemble and its weight. */
final case class Member(scorer: Scorer, weight: Double = 1.0) {
  if (weight.isNaN || weight.isInfinite) Scorer.invalid(s"a member weight must be a finite number, got $weight")
}

/** How an ensemble combines its members' weighted outputs; the codes are wire/codes.txt's. */
sealed abstract class Combine(val code: Int) extends Serializable {
  val name: String = WireCodes.Combine.names(code)
}

object Combine {
  case object Mean extends Combine(WireCodes.Combine.Mean)
  case object Sum extends Combine(WireCodes.Combine.Sum)
  case object Min extends Combine(WireCodes.Combine.Min)
  case object Max extends Combine(WireCodes.Combine.Max)
  case object Median extends Combine(WireCodes.Combine.Median)
  val all: Seq[Combine] = Seq(Mean, Sum, Min, Max, Median)

  def fromName(name: String): Combine = all.find(_.name == name).getOrElse(
    Scorer.invalid(s"unknown combine rule '$name'; expected one of ${all.map(_.name).mkString(", ")}"))
}

/** A transform of an ensemble's combined output; several apply in order. The codes are wire/codes.txt's. */
sealed abstract class OutputTransform(val code: Int) extends Serializable {
  val name: String = WireCodes.EnsembleTransform.names(code)
  def bounds: (Double, Double) = (0.0, 0.0)
}

object OutputTransform {
  case object Identity extends OutputTransform(WireCodes.EnsembleTransform.Identity)
  case object Exp extends OutputTransform(WireCodes.EnsembleTransform.Exp)
  case object Expm1 extends OutputTransform(WireCodes.EnsembleTransform.Expm1)
  case object Sigmoid extends OutputTransform(WireCodes.EnsembleTransform.Sigmoid)
  /** Bounds the output to [lo, hi]; either side may be infinite. */
  final case class Clip(lo: Double, hi: Double) extends OutputTransform(WireCodes.EnsembleTransform.Clip) {
    if (lo.isNaN || hi.isNaN || lo > hi) Scorer.invalid(s"clip needs lo <= hi, got clip($lo, $hi)")
    override def bounds: (Double, Double) = (lo, hi)
  }
  val names: Seq[String] = WireCodes.EnsembleTransform.names

  def fromName(name: String, lo: Double = Double.NegativeInfinity, hi: Double = Double.PositiveInfinity): OutputTransform =
    name match {
      case "identity" => Identity
      case "exp" => Exp
      case "expm1" => Expm1
      case "sigmoid" => Sigmoid
      case "clip" => Clip(lo, hi)
      case other => Scorer.invalid(s"unknown transform '$other'; expected one of ${names.mkString(", ")}")
    }
}

/**
 * Members' outputs, each times its weight, combined, then transformed in order:
 * sum = w1*x1 + w2*x2 + ... (in member order); mean = that sum / (w1 + w2 + ...);
 * min, max and median take the weighted outputs w_i*x_i (median of an even count is the
 * mean of the middle two).
 */
final case class EnsembleScorer(members: Seq[Member], combine: Combine = Combine.Mean,
    transforms: Seq[OutputTransform] = Nil) extends Scorer {
  if (members.isEmpty) Scorer.invalid("an ensemble needs at least one member")
  if (combine == Combine.Mean && members.map(_.weight).sum == 0) Scorer.invalid("an ensemble mean needs weights that do not sum to 0")
  def featureInputs: Seq[String] = Scorer.distinct(members.map(_.scorer.featureInputs))
  def keyInputs: Seq[String] = Scorer.distinct(members.map(_.scorer.keyInputs))
  def models: Seq[TreeModel] = Scorer.distinct(members.map(_.scorer.models))
  def nullable: Boolean = members.exists(_.scorer.nullable)
  def inputsRead: Set[String] = members.flatMap(_.scorer.inputsRead).toSet
  def describe: String =
    s"${combine.name}(${members.map(m => s"${m.weight}*${m.scorer.describe}").mkString(", ")})" +
      transforms.map(t => s".${t.name}").mkString
}

/** What a route does with a key it has no scorer for and no default. */
sealed abstract class UnknownKey(val name: String) extends Serializable
object UnknownKey {
  case object Error extends UnknownKey("error")
  case object Null extends UnknownKey("null")
  def fromName(name: String): UnknownKey = name match {
    case "error" => Error
    case "null" => Null
    case other => Scorer.invalid(s"unknown on_unknown_key '$other'; expected error or null")
  }
}

/**
 * A scorer per value of the key column (compared as text, so 7 and "7" are the same key),
 * with an optional default. A key with neither fails the task with an error naming the key
 * (the default), or scores null when `unknownKey` is Null. Rows are grouped by key inside each
 * batch, so each scorer is still called once per batch.
 */
final case class RoutedScorer(key: String, routes: Seq[(String, Scorer)], default: Option[Scorer] = None,
    unknownKey: UnknownKey = UnknownKey.Error) extends Scorer {
  if (routes.isEmpty && default.isEmpty) Scorer.invalid(s"a route on '$key' needs at least one key or a default")
  private val duplicates = routes.map(_._1).diff(routes.map(_._1).distinct)
  if (duplicates.nonEmpty) Scorer.invalid(s"a route on '$key' lists key '${duplicates.head}' twice")
  private def scorers: Seq[Scorer] = routes.map(_._2) ++ default
  def featureInputs: Seq[String] = Scorer.distinct(scorers.map(_.featureInputs))
  def keyInputs: Seq[String] = Scorer.distinct(Seq(key) +: scorers.map(_.keyInputs))
  def models: Seq[TreeModel] = Scorer.distinct(scorers.map(_.models))
  def inputsRead: Set[String] = scorers.flatMap(_.inputsRead).toSet
  def nullable: Boolean = (default.isEmpty && unknownKey == UnknownKey.Null) || scorers.exists(_.nullable)
  def describe: String =
    s"route($key: ${routes.map { case (k, s) => s"$k -> ${s.describe}" }.mkString(", ")}" +
      default.map(d => s", default -> ${d.describe}").getOrElse("") + ")"
}

/**
 * Willump-style cascade: `first` scores every row; rows whose first output is below
 * `acceptBelow` or above `acceptAbove` keep it, the rest are scored by `full`, compacted into
 * one native call per batch.
 */
final case class CascadeScorer(first: Scorer, full: Scorer, acceptBelow: Double, acceptAbove: Double) extends Scorer {
  if (acceptBelow.isNaN || acceptAbove.isNaN || acceptBelow > acceptAbove) {
    Scorer.invalid(s"a cascade needs accept_below <= accept_above, got $acceptBelow and $acceptAbove")
  }
  def featureInputs: Seq[String] = Scorer.distinct(Seq(first.featureInputs, full.featureInputs))
  def keyInputs: Seq[String] = Scorer.distinct(Seq(first.keyInputs, full.keyInputs))
  def models: Seq[TreeModel] = Scorer.distinct(Seq(first.models, full.models))
  def nullable: Boolean = first.nullable || full.nullable
  def inputsRead: Set[String] = first.inputsRead ++ full.inputsRead
  def describe: String = s"cascade(${first.describe} accepted below $acceptBelow or above $acceptAbove, else ${full.describe})"
}

/** Whether a what-if curve is forced monotone along the grid (running max or running min). */
sealed abstract class Monotone(val code: Int, val name: String) extends Serializable
object Monotone {
  case object None extends Monotone(0, "none")
  case object Increasing extends Monotone(1, "increasing")
  case object Decreasing extends Monotone(-1, "decreasing")
  def fromName(name: String): Monotone = Seq(None, Increasing, Decreasing).find(_.name == name).getOrElse(
    Scorer.invalid(s"unknown monotone '$name'; expected none, increasing or decreasing"))
}

/** One varied input of a what-if grid and the values it takes. */
final case class GridAxis(input: String, values: Seq[Double])

/**
 * What-if scoring: `scorer` evaluated at every point of a grid, giving array<double> with one
 * score per grid point per row, without exploding the DataFrame. With one axis the points are
 * its values; with several, their cross product, the first axis varying slowest (so with
 * `discount` then `shipping`, point `i * shipping.size + j` is discount i with shipping j).
 * `derived` inputs are SQL expressions recomputed at every grid point; they may read any
 * axis's value by its input name (e.g. "price * (1 - discount)"). A `monotone` curve runs
 * along the last axis, for each combination of the others.
 */
final case class GridScorer(scorer: Scorer, axes: Seq[GridAxis], derived: Seq[(String, String)],
    monotone: Monotone) extends Scorable {
  if (axes.isEmpty) Scorer.invalid("a grid needs at least one input to vary")
  axes.groupBy(_.input).collectFirst { case (name, twice) if twice.length > 1 =>
    Scorer.invalid(s"the grid varies '$name' more than once")
  }
  axes.foreach { case GridAxis(vary, values) =>
    if (values.isEmpty) Scorer.invalid(s"the grid over '$vary' needs at least one value")
    if (values.exists(v => v.isNaN || v.isInfinite)) Scorer.invalid(s"the grid over '$vary' has a value that is not finite")
    if (!scorer.featureInputs.contains(vary)) {
      Scorer.invalid(s"the grid varies '$vary', which is not an input of ${scorer.describe} " +
        s"(its inputs: ${scorer.featureInputs.mkString(", ")})")
    }
  }
  derived.map(_._1).find(d => !scorer.featureInputs.contains(d) || varied.contains(d)).foreach { d =>
    Scorer.invalid(s"the grid derives '$d', which is not another input of ${scorer.describe} " +
      s"(its inputs: ${scorer.featureInputs.mkString(", ")})")
  }
  if (axes.map(_.values.length.toLong).product > GridScorer.MaxPoints) {
    Scorer.invalid(s"the grid has ${axes.map(_.values.length.toLong).product} points; at most ${GridScorer.MaxPoints} per row")
  }

  def featureInputs: Seq[String] = scorer.featureInputs
  /** The varied inputs, in axis order. */
  def varied: Seq[String] = axes.map(_.input)
  /** Scores per row: the product of the axes' sizes. */
  def points: Int = axes.map(_.values.length).product
  def describe: String = s"grid(${scorer.describe} over " +
    axes.map(a => s"${a.input} in ${a.values.length} points").mkString(" x ") +
    (if (derived.isEmpty) "" else derived.map { case (n, e) => s"$n = $e" }.mkString("; ", "; ", "")) +
    (if (monotone == Monotone.None) "" else s", ${monotone.name}") + ")"
}

object GridScorer {
  /** The most points one row's grid may have: a row's scores are one Spark array. */
  val MaxPoints: Long = 1L << 20

  /** A grid over one input. */
  def apply(scorer: Scorer, vary: String, values: Seq[Double], derived: Seq[(String, String)] = Nil,
      monotone: Monotone = Monotone.None): GridScorer = GridScorer(scorer, Seq(GridAxis(vary, values)), derived, monotone)
}
