package treescore.model

import org.apache.spark.sql.internal.SQLConf

import treescore.TreescoreConf
import treescore.wire.WireCodes

/**
 * Which code evaluates a model's trees. Both give the same bits (treescore's engine is
 * differentially fuzzed against LightGBM's predictor); treescore's is faster. The codes are
 * wire/codes.txt's, what native loadModel takes.
 */
sealed abstract class Engine(val code: Int) extends Serializable {
  val name: String = WireCodes.Engine.names(code)
  override def toString: String = name
}

object Engine {
  /** treescore's own exact evaluator (native/src/engine). */
  case object Treescore extends Engine(WireCodes.Engine.Treescore)
  /** LightGBM's predictor, LGBM_BoosterPredictForMat. */
  case object LightGbm extends Engine(WireCodes.Engine.LightGbm)
  val all: Seq[Engine] = Seq(LightGbm, Treescore)

  /** Why treescore's engine cannot serve `kind` from `models`, if it cannot. */
  def unsupported(models: Seq[TreeModel], kind: PredictKind): Option[String] =
    if (kind != PredictKind.Contrib) None else models.find(!_.shapTables.hasCounts).map(m =>
      s"treescore's engine computes contributions from the training counts (leaf_count, internal_count), and " +
        s"model ${m.contentHash.take(12)} has none")

  /** Why no engine gives `kind` of `models`, if none does: LightGBM defines no contributions of linear trees. */
  def undefined(models: Seq[TreeModel], kind: PredictKind): Option[String] =
    if (kind != PredictKind.Contrib) None else models.find(_.hasLinearTrees).map(m =>
      s"model ${m.contentHash.take(12)} has linear trees, for which LightGBM defines no contributions (SHAP values)")

  /**
   * The engine a call of `models` with output `kind` uses under `choice` (the value of spark.treescore.engine):
   * `auto` takes treescore's engine wherever it is supported (it is the faster for every output,
   * contributions of leaves without a TreeSHAP table too), and LightGBM otherwise;
   * `treescore` insists on it and throws, naming the reason, where it is unsupported; `lightgbm`
   * always takes LightGBM. Both engines give the same bits. An output no engine defines throws
   * under every choice.
   */
  def choose(choice: String, models: Seq[TreeModel], kind: PredictKind): Engine = {
    undefined(models, kind).foreach(reason => throw new IllegalArgumentException(s"treescore: $reason"))
    TreescoreConf.EngineChoice.read(Some(choice)) match {
      case "lightgbm" => LightGbm
      case "auto" => if (unsupported(models, kind).isEmpty) Treescore else LightGbm
      case _ => unsupported(models, kind) match { // "treescore"
        case None => Treescore
        case Some(reason) => throw new IllegalArgumentException(
          s"treescore: ${TreescoreConf.EngineChoice.key} is 'treescore' but $reason; use 'auto' or 'lightgbm' for this call")
      }
    }
  }

  /** The name of the engine a score of `model` with output `kind` gets under `choice`; for Python (py4j). */
  def nameFor(choice: String, model: TreeModel, kind: String): String =
    choose(choice, Seq(model), PredictKind.fromName(kind)).name

  /** The engine for a call under the session's (or, in a task, the query's) SQL conf. */
  def forCall(models: Seq[TreeModel], kind: PredictKind, conf: SQLConf = SQLConf.get): Engine =
    choose(TreescoreConf.EngineChoice.from(conf), models, kind)
}
