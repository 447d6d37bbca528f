package treescore.model

/**
 * Which boosting iterations take part in a prediction; numIterations = -1 means all from
 * startIteration on. Each range gets its own native booster, because LightGBM stores the
 * range inside the booster when predicting (LightGBM issue #6142) and concurrent calls with
 * different ranges on one booster silently give wrong scores.
 */
final case class IterationRange(startIteration: Int, numIterations: Int) {
  override def toString: String =
    if (this == IterationRange.All) "all iterations"
    else s"iterations $startIteration..${if (numIterations < 0) "end" else (startIteration + numIterations - 1).toString}"
}

object IterationRange {
  val All: IterationRange = IterationRange(0, -1)
}
