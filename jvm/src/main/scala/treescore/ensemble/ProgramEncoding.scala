package treescore.ensemble

import scala.collection.mutable

import treescore.model.{PredictKind, TreeModel}
import treescore.wire.WireCodes.{ProgramNode => Node}

/**
 * How the JVM maps one row's key to a route index for one route node: -1 scores null; a key
 * with no route, no default and the Error policy fails the task.
 */
final case class RouteSlot(keyInput: Int, keyName: String, indexOf: Map[String, Int], default: Option[Int],
    unknownKey: UnknownKey) {
  def routeIndex(key: String): Int = indexOf.get(key).orElse(default).getOrElse(unknownKey match {
    case UnknownKey.Null => -1
    case UnknownKey.Error =>
      throw new org.apache.spark.SparkException(
        s"treescore: the route on '$keyName' has no scorer for key '$key' and no default " +
          s"(known keys: ${indexOf.keys.toSeq.sorted.take(20).mkString(", ")})")
  })
}

/** A scorer flattened into the native program encoding (see native/src/program/program_decoder.h). */
final case class EncodedProgram(code: Array[Long], constants: Array[Double], models: Seq[TreeModel],
    routeSlots: Seq[RouteSlot])

object ProgramEncoding {

  /** Encodes `scorer` reading the matrix columns `featureInputs` and key columns `keyInputs`. */
  def encode(scorer: Scorer, featureInputs: Seq[String], keyInputs: Seq[String]): EncodedProgram = {
    val nodes = mutable.ArrayBuffer.empty[Long]
    val constants = mutable.ArrayBuffer.empty[Double]
    val models = scorer.models
    val slots = mutable.ArrayBuffer.empty[RouteSlot]
    var count = 0

    def emit(s: Scorer): Int = {
      s match {
        case m: ModelScorer =>
          val kind = if (m.raw) PredictKind.Raw else PredictKind.Prediction
          nodes ++= Seq(Node.Model.toLong, models.indexOf(m.model).toLong, kind.code.toLong, m.columns.length.toLong)
          nodes ++= m.columns.map(c => featureInputs.indexOf(c).toLong)
        case e: EnsembleScorer =>
          val members = e.members.map(member => emit(member.scorer))
          nodes ++= Seq(Node.Ensemble.toLong, e.combine.code.toLong, members.length.toLong) ++ members.map(_.toLong)
          nodes ++= (e.transforms.length.toLong +: e.transforms.map(_.code.toLong))
          constants ++= e.members.map(_.weight)
          e.transforms.foreach { t => constants += t.bounds._1; constants += t.bounds._2 }
        case r: RoutedScorer =>
          val routed = r.routes.map { case (_, s) => emit(s) } ++ r.default.map(emit)
          val slot = slots.length
          slots += RouteSlot(keyInputs.indexOf(r.key), r.key, r.routes.map(_._1).zipWithIndex.toMap,
            r.default.map(_ => r.routes.length), r.unknownKey)
          nodes ++= Seq(Node.Route.toLong, slot.toLong, routed.length.toLong) ++ routed.map(_.toLong)
        case c: CascadeScorer =>
          val first = emit(c.first)
          val full = emit(c.full)
          nodes ++= Seq(Node.Cascade.toLong, first.toLong, full.toLong)
          constants ++= Seq(c.acceptBelow, c.acceptAbove)
      }
      count += 1
      count - 1
    }

    emit(scorer)
    val header = Array(featureInputs.length.toLong, slots.length.toLong, count.toLong)
    EncodedProgram(header ++ nodes, constants.toArray, models, slots.toSeq)
  }
}
