package treescore

import treescore.model.{IterationRange, PredictKind}

/**
 * How `score` scores: what it returns and which boosting iterations take part. Mirrors the
 * Python keyword arguments of `treescore.score`.
 *
 * {{{
 *   score(model, ScoreOptions(kind = "contrib"), cols: _*)
 *   score(model, ScoreOptions(startIteration = 10, numIterations = 50), cols: _*)
 * }}}
 *
 * @param kind           "prediction" (default: as Booster.predict returns), "raw", "leaf" or "contrib"
 * @param startIteration the first iteration used (0 by default)
 * @param numIterations  how many iterations from there; -1 (default) or 0 means all of them
 */
case class ScoreOptions(kind: String = "prediction", startIteration: Int = 0, numIterations: Int = -1) {
  val predictKind: PredictKind = PredictKind.fromName(kind)
  if (startIteration < 0) {
    throw new IllegalArgumentException(s"treescore: startIteration must be 0 or more, got $startIteration")
  }
  def iterations: IterationRange = IterationRange(startIteration, if (numIterations <= 0) -1 else numIterations)
}

object ScoreOptions {
  val Default: ScoreOptions = ScoreOptions()
}
