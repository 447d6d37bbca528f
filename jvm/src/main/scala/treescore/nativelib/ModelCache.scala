package treescore.nativelib

import scala.collection.mutable

import org.apache.spark.SparkEnv
import org.slf4j.LoggerFactory

import treescore.TreescoreConf
import treescore.model.{Engine, IterationRange, PredictKind, TreeModel}

/**
 * The executor-side cache: one native model per (content hash, iteration range, engine) per JVM,
 * shared by every task that scores with it, within a byte budget.
 *
 * Tasks hold a [[ModelLease]] while they score. Loading happens once per key, however many
 * tasks ask at the same moment (the others wait for it). When the loaded models exceed the
 * budget, the least recently used ones that no task holds are freed; a model in use is never
 * freed, so the cache may exceed its budget until leases are returned. A model's size is
 * estimated by the length of its text, which is close to what LightGBM keeps in memory, plus,
 * once treescore's engine is asked for its contributions, its TreeSHAP tables
 * ([[treescore.model.TreeShapTables]]), which stay with it from then on.
 */
object ModelCache {
  // One INFO line per native parse lets operators (and the cluster test) see that each executor
  // parses a model once, however many tasks share it.
  private val log = LoggerFactory.getLogger(getClass.getName.stripSuffix("$"))

  private final case class Key(contentHash: String, range: IterationRange, engine: Engine)

  private final class Entry(val key: Key, var bytes: Long) {
    var users = 0
    @volatile private var native: NativeModel = _ // volatile: isLoaded reads it without the entry's lock
    private var loadNanos = 0L

    /** Loads on first use, once; other callers wait on this entry only, not the cache. */
    def loaded(model: TreeModel): (NativeModel, Long) = synchronized {
      if (native == null) {
        val start = System.nanoTime()
        native = NativeModel.load(model, key.range, key.engine)
        loadNanos = System.nanoTime() - start
        log.info(f"treescore: parsed model ${key.contentHash.take(12)} (${key.range}, ${key.engine} engine) in ${loadNanos / 1e6}%.1f ms")
        (native, loadNanos)
      } else (native, 0L)
    }

    def isLoaded: Boolean = native != null
    def free(): Unit = synchronized { if (native != null) native.close(); native = null }
  }

  // Insertion order doubles as recency order: a touched entry is removed and re-added.
  private val entries = mutable.LinkedHashMap.empty[Key, Entry]
  @volatile private var budgetOverride: Option[Long] = None

  /**
   * Leases `model` loaded into `engine` for `range`, to compute `kind`; the lease says how long
   * loading took. Room for what `kind` will build is made before it is built.
   */
  def acquire(model: TreeModel, range: IterationRange, engine: Engine, kind: PredictKind): ModelLease = {
    val key = Key(model.contentHash, range, engine)
    val entry = synchronized {
      val e = entries.remove(key).getOrElse(new Entry(key, model.text.length.toLong))
      if (engine == Engine.Treescore && kind == PredictKind.Contrib) {
        e.bytes = math.max(e.bytes, model.text.length.toLong + model.shapTables.tableBytes)
      }
      entries.put(key, e)
      e.users += 1
      e
    }
    try {
      val (native, loadNanos) = entry.loaded(model)
      synchronized(evictOverBudget())
      new ModelLease(native, loadNanos, () => release(entry))
    } catch {
      case e: Throwable =>
        release(entry)
        throw e
    }
  }

  private def release(entry: Entry): Unit = synchronized {
    entry.users -= 1
    if (entry.users == 0 && !entry.isLoaded) entries.remove(entry.key) // its load failed
    evictOverBudget()
  }

  private def evictOverBudget(): Unit = {
    var loadedBytes = entries.valuesIterator.filter(_.isLoaded).map(_.bytes).sum
    val budget = maxBytes
    val idle = entries.valuesIterator.filter(e => e.users == 0).toList // least recent first
    idle.iterator.takeWhile(_ => loadedBytes > budget).foreach { e =>
      entries.remove(e.key)
      if (e.isLoaded) loadedBytes -= e.bytes
      e.free()
    }
  }

  private def maxBytes: Long =
    budgetOverride.getOrElse(TreescoreConf.CacheMaxBytes.read(Option(SparkEnv.get).flatMap(_.conf.getOption(TreescoreConf.CacheMaxBytes.key))))

  /** Leases held right now, over all models; each task scorer returns its own when it closes. */
  def leasesHeld: Int = synchronized(entries.valuesIterator.map(_.users).sum)

  /** Models loaded in this JVM right now. */
  def loadedCount: Int = synchronized(entries.valuesIterator.count(_.isLoaded))

  /** Bytes (estimated) of the models loaded in this JVM right now. */
  def loadedBytes: Long = synchronized(entries.valuesIterator.filter(_.isLoaded).map(_.bytes).sum)

  /** Sets the budget for this JVM, overriding the Spark conf; for tests. None restores the conf. */
  def setMaxBytesForTesting(bytes: Option[Long]): Unit = { budgetOverride = bytes; synchronized(evictOverBudget()) }

  /** Frees every model no task is using. */
  def clear(): Unit = synchronized {
    entries.values.filter(_.users == 0).toList.foreach { e => entries.remove(e.key); e.free() }
  }
}

/** A task's hold on a cached native model; close() hands it back (once). */
final class ModelLease private[nativelib] (val model: NativeModel, val loadNanos: Long, onClose: () => Unit)
  extends AutoCloseable {
  private val closed = new java.util.concurrent.atomic.AtomicBoolean(false)
  override def close(): Unit = if (closed.compareAndSet(false, true)) onClose()
}
