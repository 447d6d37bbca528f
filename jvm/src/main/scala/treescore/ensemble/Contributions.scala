package treescore.ensemble

import treescore.model.{Engine, PredictKind}

/**
 * When `kind = "contrib"` of an ensemble, route, cascade or grid is exact, checked on the
 * driver before anything runs. Shapley values are linear: the contributions of a weighted sum
 * or mean are the same weighted sum or mean of its members' TreeSHAP values, a route gives its
 * chosen scorer's and a cascade the answering stage's. Everything is in the raw (link) space:
 * an outermost transform (sigmoid, exp, expm1) is left out, as LightGBM leaves a binary
 * model's sigmoid out of its own contributions. What is not linear, and models LightGBM defines
 * no contributions for (linear trees), are refused, naming why.
 */
object Contributions {

  /** Throws IllegalArgumentException naming the part whose contributions would not be exact. */
  def requireExact(scorable: Scorable): Unit = scorable match {
    case scorer: Scorer => check(scorer, combined = false)
    case grid: GridScorer =>
      if (grid.monotone != Monotone.None) {
        refuse(grid.describe, s"forcing the curve ${grid.monotone.name} (a running max or min) is not linear")
      }
      check(grid.scorer, combined = false)
  }

  /** `combined`: whether an ensemble adds this scorer's output up with others. */
  private def check(scorer: Scorer, combined: Boolean): Unit = scorer match {
    case m: ModelScorer =>
      Engine.undefined(Seq(m.model), PredictKind.Contrib).foreach(reason =>
        Scorer.invalid(s"contributions of ${m.describe} are not defined: $reason"))
      if (combined && !m.raw && !m.model.predictionIsRaw) {
        refuse(m.describe, s"its objective (${m.model.objective.getOrElse("none")}) transforms the raw score before " +
          "the ensemble combines it, which is not linear; combine raw scores instead (Member(model, raw=True) in " +
          "Python, ModelScorer(..., raw = true) in Scala)")
      }
    case e: EnsembleScorer =>
      if (e.combine != Combine.Sum && e.combine != Combine.Mean) {
        refuse(e.describe, s"its ${e.combine.name} combination is not linear in its members; only sum and mean are")
      }
      e.transforms.find(_.isInstanceOf[OutputTransform.Clip]).foreach { _ =>
        refuse(e.describe, "a clip is not a link function, so no contributions explain the clipped score")
      }
      if (combined && e.transforms.exists(_ != OutputTransform.Identity)) {
        refuse(e.describe, s"its transforms (${e.transforms.map(_.name).mkString(", ")}) apply before an outer " +
          "ensemble combines it, which is not linear")
      }
      e.members.foreach(member => check(member.scorer, combined = true))
    case r: RoutedScorer => (r.routes.map(_._2) ++ r.default).foreach(check(_, combined))
    case c: CascadeScorer =>
      check(c.first, combined)
      check(c.full, combined)
  }

  private def refuse(part: String, reason: String): Nothing =
    Scorer.invalid(s"contributions of $part are not exact: $reason")
}
