package treescore.nativelib

import scala.collection.mutable

import org.apache.spark.{SparkConf, SparkEnv}
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
 * freed, so the cache may exceed its budget until leases are returned. A model is charged the
 * native bytes it holds ([[NativeModel.heldBytes]]: what loading it kept, and what it built
 * since), read after it loads and whenever a lease is returned. Once treescore's engine is asked
 * for a model's contributions, the model is charged at least its load plus the TreeSHAP tables
 * the driver estimates ([[treescore.model.TreeShapTables]]), so that room is made before the
 * tables are built, not after.
 */
object ModelCache {
  // One INFO line per native parse lets operators (and the cluster test) see that each executor
  // parses a model once, however many tasks share it.
  private val log = LoggerFactory.getLogger(getClass.getName.stripSuffix("$"))

  private final case class Key(contentHash: String, range: IterationRange, engine: Engine)

  private final class Entry(val key: Key) {
    var users = 0
    @volatile private var native: NativeModel = _ // volatile: isLoaded reads it without the entry's lock
    // Volatile, not locked: the cache recharges an entry under its own lock, which must not wait
    // for another model's load. A model held by a lease is never freed meanwhile.
    @volatile private var charged = 0L
    @volatile private var loadBytes = 0L
    @volatile private var tablesEstimate = 0L // once contributions are asked of treescore's engine

    /** Loads on first use, once; other callers wait on this entry only, not the cache. */
    def loaded(model: TreeModel): (NativeModel, Long) = synchronized {
      if (native == null) {
        val start = System.nanoTime()
        val loadedModel = NativeModel.load(model, key.range, key.engine)
        val loadNanos = System.nanoTime() - start
        loadBytes = loadedModel.heldBytes
        native = loadedModel
        recharge()
        log.info(f"treescore: parsed model ${key.contentHash.take(12)} (${key.range}, ${key.engine} engine) in " +
          f"${loadNanos / 1e6}%.1f ms, holding ${loadBytes >> 10} KiB native")
        (native, loadNanos)
      } else (native, 0L)
    }

    /** Charges room for TreeSHAP tables of `bytes` before they are built. */
    def expectTables(bytes: Long): Unit = { tablesEstimate = math.max(tablesEstimate, bytes); recharge() }

    /** Reads again what the model holds, which grows with what its calls build. */
    def recharge(): Unit = {
      val model = native
      if (model != null) charged = math.max(model.heldBytes, if (tablesEstimate > 0) loadBytes + tablesEstimate else 0L)
    }

    /** What the model holds natively now: 0 until loaded. */
    def held: Long = { val model = native; if (model != null) model.heldBytes else 0L }

    /** Bytes counted against the budget: 0 until loaded. */
    def bytes: Long = if (native != null) charged else 0L

    def isLoaded: Boolean = native != null
    def free(reason: String): Unit = synchronized {
      if (native != null) {
        log.info(s"treescore: freed model ${key.contentHash.take(12)} (${key.range}, ${key.engine} engine) holding " +
          s"${charged >> 10} KiB native: $reason")
        native.close()
      }
      native = null
      charged = 0L
    }
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
      val e = entries.remove(key).getOrElse(new Entry(key))
      entries.put(key, e)
      e.users += 1
      e
    }
    try {
      val (native, loadNanos) = entry.loaded(model)
      if (engine == Engine.Treescore && kind == PredictKind.Contrib) entry.expectTables(model.shapTables.tableBytes)
      warnIfOverBudget(entry, kind)
      synchronized(evictOverBudget())
      new ModelLease(native, loadNanos, () => release(entry))
    } catch {
      case e: Throwable =>
        release(entry)
        throw e
    }
  }

  // Models said to be over the budget on their own, so that each is said once per JVM.
  private val saidOverBudget = java.util.concurrent.ConcurrentHashMap.newKeySet[Key]()

  /**
   * A model that alone holds more than the budget is still scored, but not kept: it is freed as
   * soon as no task holds it, and every task that needs it parses it again. Said once per model.
   */
  private def warnIfOverBudget(entry: Entry, kind: PredictKind): Unit = {
    val budget = currentBudget
    if (entry.bytes > budget.maxBytes && saidOverBudget.add(entry.key)) {
      val key = entry.key
      log.warn(s"treescore: model ${key.contentHash.take(12)} (${key.range}, ${key.engine} engine) holds " +
        s"${CacheBudget.mib(entry.bytes)} of native memory" +
        (if (kind == PredictKind.Contrib && key.engine == Engine.Treescore) " with its TreeSHAP tables" else "") +
        s", more than the model cache's budget of ${CacheBudget.mib(budget.maxBytes)} (${budget.describe}). It is " +
        "scored uncached: freed when no task holds it and parsed again by every task that needs it. Raise " +
        s"spark.executor.memoryOverhead, or set ${TreescoreConf.CacheMaxBytes.key} to at least " +
        s"${CacheBudget.mib(entry.bytes + (1L << 20))}.")
    }
  }

  private def release(entry: Entry): Unit = synchronized {
    entry.recharge()
    entry.users -= 1
    if (entry.users == 0 && !entry.isLoaded) entries.remove(entry.key) // its load failed
    evictOverBudget()
  }

  private def evictOverBudget(): Unit = {
    var loadedBytes = entries.valuesIterator.map(_.bytes).sum
    val budget = maxBytes
    val idle = entries.valuesIterator.filter(e => e.users == 0).toList // least recent first
    idle.iterator.takeWhile(_ => loadedBytes > budget).foreach { e =>
      entries.remove(e.key)
      loadedBytes -= e.bytes
      evicted.incrementAndGet()
      e.free(s"the cache held ${(loadedBytes + e.bytes) >> 10} KiB, over its budget of ${budget >> 10} KiB")
    }
  }

  private def maxBytes: Long = currentBudget.maxBytes

  /** The budget in bytes this JVM's cache keeps to now. */
  def budgetBytes: Long = maxBytes

  /** The budget of this JVM: from its Spark conf, or as in local mode outside Spark. */
  private def currentBudget: CacheBudget = {
    val conf = Option(SparkEnv.get).map(_.conf).getOrElse(new SparkConf(false).setMaster("local"))
    val budget = CacheBudget.of(conf)
    budgetOverride.fold(budget)(bytes => budget.copy(configured = Some(bytes)))
  }

  /** Models freed for the budget since this JVM started. */
  def evictions: Long = evicted.get()
  private val evicted = new java.util.concurrent.atomic.AtomicLong()

  /** Leases held right now, over all models; each task scorer returns its own when it closes. */
  def leasesHeld: Int = synchronized(entries.valuesIterator.map(_.users).sum)

  /** Models loaded in this JVM right now. */
  def loadedCount: Int = synchronized(entries.valuesIterator.count(_.isLoaded))

  /** Bytes charged for the models loaded in this JVM right now. */
  def loadedBytes: Long = synchronized(entries.valuesIterator.map(_.bytes).sum)

  /** Native bytes the models loaded in this JVM hold right now, as the native account counts them. */
  def heldBytes: Long = synchronized(entries.valuesIterator.map(_.held).sum)

  /** Sets the budget for this JVM, overriding the Spark conf; for tests. None restores the conf. */
  def setMaxBytesForTesting(bytes: Option[Long]): Unit = { budgetOverride = bytes; synchronized(evictOverBudget()) }

  /** Frees every model no task is using. */
  def clear(): Unit = synchronized {
    entries.values.filter(_.users == 0).toList.foreach { e => entries.remove(e.key); e.free("the cache was cleared") }
  }
}

/** A task's hold on a cached native model; close() hands it back (once). */
final class ModelLease private[nativelib] (val model: NativeModel, val loadNanos: Long, onClose: () => Unit)
  extends AutoCloseable {
  private val closed = new java.util.concurrent.atomic.AtomicBoolean(false)
  override def close(): Unit = if (closed.compareAndSet(false, true)) onClose()
}
