package treescore.model

import java.util.concurrent.ConcurrentHashMap

/**
 * The executor-side cache: one native model per content hash per JVM, shared by every task
 * that scores with it. Loading happens once, under the map's per-key lock, however many tasks
 * ask at the same moment. All tasks of a model use the same iteration range, which is what
 * makes sharing one LightGBM booster safe (LightGBM issue #6142).
 */
object ModelCache {
  private val models = new ConcurrentHashMap[String, NativeModel]()

  /** The loaded model and the nanoseconds this call spent loading it (0 when it was cached). */
  def get(model: TreeModel): (NativeModel, Long) = {
    var loadNanos = 0L
    val native = models.computeIfAbsent(model.contentHash, _ => {
      val start = System.nanoTime()
      val loaded = NativeModel.load(model)
      loadNanos = System.nanoTime() - start
      loaded
    })
    (native, loadNanos)
  }

  /** How many models this JVM holds. */
  def size: Int = models.size

  /** Frees every cached model. Only for when nothing is scoring (tests, shutdown). */
  def clear(): Unit = models.keySet().forEach(key => Option(models.remove(key)).foreach(_.close()))
}
