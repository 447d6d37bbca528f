package treescore.model

import treescore.wire.WireLimits

/**
 * How treescore's engine lays out a model's trees for an output kind, as plans name it. The
 * native engine chooses by the same rule (native/src/engine/exact_scorer.cpp, auto layout) from
 * the same limits (wire/limits.txt): QuickScorer's leaf sets where every tree has at most
 * QuickScorerMostLeaves leaves and no numerical threshold is NaN, in 32-bit words up to
 * QuickScorerNarrowLeaves; the node walk otherwise. Contributions run TreeSHAP in any layout.
 * The name is the whole model's: a call over an iteration range whose trees all fit 32-bit words
 * runs them even where other trees need 64.
 * Which SIMD level runs it is each executor's CPU's to decide, so plans cannot say.
 */
object EngineLayout {

  def of(model: TreeModel, kind: PredictKind): String =
    if (kind == PredictKind.Contrib) "TreeSHAP"
    else if (model.mostLeaves > WireLimits.QuickScorerMostLeaves || model.hasNanThreshold) "node walk"
    else if (model.mostLeaves > WireLimits.QuickScorerNarrowLeaves) "quickscorer, 64-bit leaf sets"
    else "quickscorer, 32-bit leaf sets"

  /** The layouts of a call's models, each once, in the models' order. */
  def describe(models: Seq[TreeModel], kind: PredictKind): String = models.map(of(_, kind)).distinct.mkString("; ")
}
