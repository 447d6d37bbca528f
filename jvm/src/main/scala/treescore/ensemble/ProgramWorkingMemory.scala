package treescore.ensemble

/**
 * The working memory a native program holds per row it evaluates (a grid's every point is a row),
 * in doubles (an int64 row number counts as one), as native/src/program/program.cpp allocates it:
 * each combinator's per-row vectors, and along the deepest path of nested combinators, since
 * members and routes are evaluated one after another and free theirs before the next. What a
 * model node copies, and a model's own contributions, are taken about a MiB at a time there
 * (PartRows) and so do not grow with the batch; the automatic model budget's per-slot working
 * allowance covers them. With the program's task buffers, this bounds a batch's rows
 * (spark.treescore.batch.maxBytes).
 */
object ProgramWorkingMemory {

  /**
   * Per row: the evaluation's row numbers, and what `scorer` holds beneath them. `varying`: the
   * grid inputs that vary, `width`: the doubles of one row's contributions (inputs + 1).
   */
  def doublesPerRow(scorer: Scorer, varying: Int, width: Int, contributions: Boolean): Long =
    1L + (if (contributions) ofContributions(scorer, varying, width) else ofScores(scorer, varying))

  // Program::EvalNode: a model its varying values and its base rows' first points; an ensemble
  // its members' outputs; a route its groups' rows, their positions and one group's scores; a
  // cascade its two halves' rows and positions and the escalated rows' scores.
  private def ofScores(scorer: Scorer, varying: Int): Long = scorer match {
    case _: ModelScorer => varying + 1L
    case ensemble: EnsembleScorer => ensemble.members.length + ensemble.members.map(m => ofScores(m.scorer, varying)).max
    case route: RoutedScorer => 3L + routed(route).map(ofScores(_, varying)).max
    case cascade: CascadeScorer => 3L + math.max(ofScores(cascade.first, varying), ofScores(cascade.full, varying))
  }

  // Program::EvalContributions: an ensemble one member's contributions; a route its groups' rows,
  // their positions and one group's contributions; a cascade its first stage's scores, its halves'
  // rows and positions, and one half's contributions.
  private def ofContributions(scorer: Scorer, varying: Int, width: Int): Long = scorer match {
    case _: ModelScorer => 0L
    case ensemble: EnsembleScorer => width + ensemble.members.map(m => ofContributions(m.scorer, varying, width)).max
    case route: RoutedScorer => 2L + width + routed(route).map(ofContributions(_, varying, width)).max
    case cascade: CascadeScorer =>
      3L + width + Seq(ofScores(cascade.first, varying), ofContributions(cascade.first, varying, width),
        ofContributions(cascade.full, varying, width)).max
  }

  private def routed(route: RoutedScorer): Seq[Scorer] = route.routes.map(_._2) ++ route.default
}
