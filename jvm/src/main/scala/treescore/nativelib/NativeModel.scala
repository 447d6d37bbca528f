package treescore.nativelib

import java.nio.charset.StandardCharsets
import java.util.concurrent.atomic.AtomicBoolean

import treescore.model.{Engine, IterationRange, PredictKind, TreeModel}
import treescore.wire.WireLimits

/**
 * The one owner of a native model handle: a model loaded into one [[Engine]], bound to one
 * iteration range (see [[IterationRange]] for why). close() releases the handle exactly once; a call already
 * scoring with it finishes first, as the native side keeps the model alive for that call.
 */
final class NativeModel private (private[treescore] val handle: Long, val range: IterationRange, val engine: Engine) extends AutoCloseable {
  private val closed = new AtomicBoolean(false)

  val numFeatures: Int = NativeMethods.numFeatures(handle)
  val numClasses: Int = NativeMethods.numClasses(handle)

  /** Native bytes the model holds: what loading it kept, and what its calls built since (TreeSHAP tables). */
  def heldBytes: Long = NativeMethods.modelHeldBytes(handle)

  /**
   * The most native working memory one call with the model holds per thread beside its batch's
   * buffers: [[WireLimits.TaskWorkingMemoryBytes]], or more for a model of thousands of trees,
   * of trees of thousands of leaves, or of thousands of features per class.
   */
  val workingBytes: Long = NativeMethods.modelWorkingBytes(handle)

  def outputsPerRow(kind: PredictKind): Int =
    Math.toIntExact(NativeMethods.outputsPerRow(handle, kind.code, range.startIteration, range.numIterations))

  /** Scores the rows of `features` (one column per model feature) into `out`, in one native call. */
  def predict(features: FeatureColumns, kind: PredictKind, numThreads: Int, out: OffHeapDoubles): Unit =
    NativeMethods.predict(handle, features.address, features.numColumns, features.rowStride, features.numRows, kind.code,
      range.startIteration, range.numIterations, numThreads, out.address, out.capacity)

  override def close(): Unit = if (closed.compareAndSet(false, true)) NativeMethods.releaseModel(handle)
}

object NativeModel {
  /**
   * Every native path starts by loading a model, so this is where a platform without natives
   * gets the loader's message, every time, rather than NativeMethods' failed class initialization.
   */
  def load(model: TreeModel, range: IterationRange, engine: Engine,
      maxTableAddends: Long = WireLimits.TreeShapMaxTableAddends): NativeModel = {
    NativeLoader.ensureLoaded()
    val text = model.text.getBytes(StandardCharsets.UTF_8)
    new NativeModel(NativeMethods.loadModel(text, engine.code, maxTableAddends), range, engine)
  }
}
