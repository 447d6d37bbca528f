package treescore.model

import java.io.{ObjectInputStream, ObjectOutputStream}
import java.lang.ref.WeakReference

import org.apache.spark.SparkContext
import org.apache.spark.broadcast.Broadcast
import org.slf4j.LoggerFactory

/**
 * How a model's text reaches the executors.
 *
 * Small models travel inline, inside the serialized plan: Spark sends a stage's plan to each
 * executor once but deserializes it once per task, which costs nothing for the usual model of
 * a few MB, and needs no SparkContext (a TreeModel can be made and serialized without one).
 *
 * A model over `spark.treescore.broadcast.thresholdBytes` (default 100 MiB) is shipped as a
 * Spark broadcast when a batched plan ([[treescore.execution.BatchScoreExec]]) runs: the plan
 * then carries only the broadcast's handle, each executor fetches the text once (peer to peer,
 * as TorrentBroadcast does) and keeps one deserialized copy for all its tasks and later jobs.
 * An executor logs one INFO line when the text arrives ("treescore: model <hash> ... arrived").
 *
 * Lifetime: the broadcast belongs to the TreeModel object. Spark's ContextCleaner removes it
 * from the executors once the model is garbage collected on the driver; a model used again
 * after its SparkContext stopped is shipped anew through the next one.
 */
private[model] object ModelShipping {

  sealed trait Body {
    def text: String
    /** The broadcast this body's model travels as, while its SparkContext is running. */
    def live: Option[Broadcast[ModelPayload]]
  }

  final case class Inline(text: String) extends Body {
    override def live: Option[Broadcast[ModelPayload]] = None
  }

  /** On the driver, once shipped: the driver keeps its own text. */
  final class Shipped(val text: String, broadcast: Broadcast[ModelPayload], context: WeakReference[SparkContext])
    extends Body {
    override def live: Option[Broadcast[ModelPayload]] =
      Option(context.get).filterNot(_.isStopped).map(_ => broadcast)
  }

  /** On an executor: the text is this JVM's one copy of the broadcast value. */
  final class Received(broadcast: Broadcast[ModelPayload]) extends Body {
    override def text: String = broadcast.value.text
    override def live: Option[Broadcast[ModelPayload]] = Some(broadcast)
  }

  /** `body` shipped through `sc` if its text is over `thresholdBytes` and not already shipped there. */
  def ship(body: Body, contentHash: String, sc: SparkContext, thresholdBytes: Long): Body =
    if (body.live.isDefined) body
    else {
      val text = body.text
      // Model text is ASCII but for feature names, so its length is its size in bytes, near enough.
      if (text.length > thresholdBytes) new Shipped(text, sc.broadcast(new ModelPayload(contentHash, text)), new WeakReference(sc))
      else Inline(text)
    }

  def write(body: Body, out: ObjectOutputStream): Unit = body.live match {
    case Some(broadcast) =>
      out.writeBoolean(true)
      out.writeObject(broadcast)
    case None =>
      out.writeBoolean(false)
      out.writeObject(body.text)
  }

  def read(in: ObjectInputStream): Body =
    if (in.readBoolean()) new Received(in.readObject().asInstanceOf[Broadcast[ModelPayload]])
    else Inline(in.readObject().asInstanceOf[String])
}

/**
 * A model's text as broadcast. Spark deserializes a broadcast value once per executor JVM and
 * keeps it for every later task, so the line this logs appears once per executor and model.
 */
final class ModelPayload(val contentHash: String, val text: String) extends Serializable {
  private def readObject(in: ObjectInputStream): Unit = {
    in.defaultReadObject()
    ModelPayload.log.info(s"treescore: model ${contentHash.take(12)} (${text.length} bytes) arrived in this JVM " +
      "through a broadcast; every task here shares this copy")
  }
}

private object ModelPayload {
  private val log = LoggerFactory.getLogger(classOf[ModelPayload])
}
