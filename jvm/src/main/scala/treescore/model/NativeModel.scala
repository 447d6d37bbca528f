package treescore.model

import java.nio.charset.StandardCharsets
import java.util.concurrent.atomic.AtomicBoolean

import treescore.nativelib.{NativeLoader, NativeMethods}

/**
 * The one owner of a native LightGBM model handle. close() releases it exactly once; a call
 * already scoring with it finishes first (the native side keeps the model alive for that call).
 */
final class NativeModel private (handle: Long) extends AutoCloseable {
  private val closed = new AtomicBoolean(false)

  val numFeatures: Int = NativeMethods.numFeatures(handle)
  val numClasses: Int = NativeMethods.numClasses(handle)

  def outputsPerRow(kind: PredictKind): Int = {
    val outputs = NativeMethods.outputsPerRow(handle, kind.code, 0, -1)
    Math.toIntExact(outputs)
  }

  /** Scores numRows rows of numFeatures doubles held by `rows` into `out`, in one native call. */
  def predict(rows: OffHeapDoubles, numRows: Int, kind: PredictKind, numThreads: Int, out: OffHeapDoubles): Unit =
    NativeMethods.predictRowMajor(handle, rows.address, rows.capacity, numRows, numFeatures, kind.code, 0, -1,
      numThreads, out.address, out.capacity)

  override def close(): Unit = if (closed.compareAndSet(false, true)) NativeMethods.releaseModel(handle)
}

object NativeModel {
  def load(model: TreeModel): NativeModel = {
    NativeLoader.ensureLoaded()
    new NativeModel(NativeMethods.loadModel(model.text.getBytes(StandardCharsets.UTF_8)))
  }
}

/** What a prediction returns; the codes are LightGBM's C_API_PREDICT_* values. */
sealed abstract class PredictKind(val code: Int)

object PredictKind {
  case object Prediction extends PredictKind(0)
}
