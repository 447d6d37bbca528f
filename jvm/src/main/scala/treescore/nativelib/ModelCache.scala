package treescore.nativelib

import scala.collection.mutable

import org.apache.spark.{SparkConf, SparkEnv, TaskContext}
import org.slf4j.LoggerFactory

import treescore.TreescoreConf
import treescore.model.{Engine, IterationRange, PredictKind, TreeModel}

/**
 * The executor-side cache: one native model per (content hash, iteration range, engine) per JVM,
 * shared by every task that scores with it, within a byte budget that it never lets go over.
 *
 * Tasks hold a [[ModelLease]] while they score. Loading happens once per key, however many
 * tasks ask at the same moment (the others wait for it). A model is charged the native bytes it
 * holds ([[NativeModel.heldBytes]]: what loading it kept, and what it built since), read after it
 * loads and whenever a lease is returned, and for every task slot what one of its calls needs
 * beyond the slot's working allowance ([[NativeModel.workingBytes]]; nothing for most models).
 *
 * Room is admitted before memory is taken: a load reserves [[ModelCache.loadReserve]] first, and
 * contributions on treescore's engine reserve the TreeSHAP tables the driver estimates
 * ([[treescore.model.TreeShapTables]]) before they are built. Those tables keep at most what the
 * budget leaves once the model is loaded; the leaves left without one replay. To make room, the
 * least recently used models that no task holds are freed. Where that is not enough, the task waits for other
 * tasks to return their leases. A task that holds leases does not wait where no other task could
 * return one (every other holder is waiting too): the models asked for together ([[acquireAll]],
 * as a task's batched operators ask for all their calls' models) are then returned and asked for
 * again, and a lone request fails with [[NoRoomYet]]: its caller may return what it holds and ask
 * again, or fail the task, which Spark retries. Where the models one task
 * needs together alone exceed the budget, it fails with an error naming the sizes and the
 * settings to raise.
 */
object ModelCache {
  // One INFO line per native parse lets operators (and the cluster test) see that each executor
  // parses a model once, however many tasks share it.
  private val log = LoggerFactory.getLogger(getClass.getName.stripSuffix("$"))

  private final case class Key(contentHash: String, range: IterationRange, engine: Engine)

  /** `tableAddends`: the most its TreeSHAP tables may keep ([[tableAddendsFor]]), fixed as it is first asked for. */
  private final class Entry(val key: Key, tableAddends: Long) {
    var users = 0 // guarded by the cache's lock
    @volatile private var native: NativeModel = _ // volatile: isLoaded reads it without the entry's lock
    // Volatile, not locked: the cache recharges an entry under its own lock, which must not wait
    // for another model's load. A model held by a lease is never freed meanwhile.
    @volatile private var charged = 0L
    @volatile private var loadBytes = 0L
    @volatile private var reserved = 0L // admitted for the load, until it is done
    @volatile private var tablesEstimate = 0L // once contributions are asked of treescore's engine
    // What the task slots' calls need beyond their working allowance, known once loaded, and
    // charged once admitted.
    @volatile private var working = 0L
    @volatile private var workingAdmitted = false

    /** Loads on first use, once; other callers wait on this entry only, not the cache. */
    def loaded(model: TreeModel): (NativeModel, Long) = synchronized {
      if (native == null) {
        val start = System.nanoTime()
        val loadedModel = NativeModel.load(model, key.range, key.engine, tableAddends)
        val loadNanos = System.nanoTime() - start
        loadBytes = loadedModel.heldBytes
        working = workingBeyondAllowance(loadedModel, currentBudget)
        native = loadedModel
        recharge()
        log.info(f"treescore: parsed model ${key.contentHash.take(12)} (${key.range}, ${key.engine} engine) in " +
          f"${loadNanos / 1e6}%.1f ms, holding ${loadBytes >> 10} KiB native" +
          (if (working > 0) f", and charged ${working >> 10} KiB for its calls' working memory" else ""))
        (native, loadNanos)
      } else (native, 0L)
    }

    /**
     * What this entry must be charged before a call of `kind` may use it: before the load, its
     * reserve; once loaded, what it holds, the room for tables, and its calls' working memory.
     */
    def needs(model: TreeModel, kind: PredictKind): Long = {
      val tables = tablesFor(model, kind)
      if (native != null) math.max(bytes, math.max(held, if (tables > 0) loadBytes + tables else 0L) + working)
      else math.max(bytes, loadReserve(model, key.range) + tables)
    }

    /** Admits what [[needs]] asked for: the load's reserve, or once loaded the tables' room and the working memory. */
    def admit(model: TreeModel, kind: PredictKind): Unit = {
      tablesEstimate = math.max(tablesEstimate, tablesFor(model, kind))
      if (native == null) reserved = math.max(reserved, loadReserve(model, key.range) + tablesEstimate)
      else workingAdmitted = true
      recharge()
    }

    private def tablesFor(model: TreeModel, kind: PredictKind): Long = tableRoom(model, key.engine, kind, tableAddends)

    /** Reads again what the model holds, which grows with what its calls build. */
    def recharge(): Unit = {
      val model = native
      if (model != null) {
        charged = math.max(model.heldBytes, if (tablesEstimate > 0) loadBytes + tablesEstimate else 0L) +
          (if (workingAdmitted) working else 0L)
      }
    }

    /** What the model holds natively now: 0 until loaded. */
    def held: Long = { val model = native; if (model != null) model.heldBytes else 0L }

    /** Bytes counted against the budget: what it holds once loaded, and its reserve until then. */
    def bytes: Long = if (native != null) charged else reserved

    def isLoaded: Boolean = native != null
    def free(reason: String): Unit = synchronized {
      if (native != null) {
        log.info(s"treescore: freed model ${key.contentHash.take(12)} (${key.range}, ${key.engine} engine) holding " +
          s"${charged >> 10} KiB native: $reason")
        native.close()
      }
      native = null
      charged = 0L
      reserved = 0L
      working = 0L
      workingAdmitted = false
    }
  }

  /**
   * What the calls of `native`'s task slots may hold at once beyond the working memory the budget
   * leaves each of their threads ([[CacheBudget.WorkingReserveBytes]]): nothing but for a model of
   * thousands of trees, of trees of thousands of leaves, or of thousands of features per class.
   */
  private def workingBeyondAllowance(native: NativeModel, budget: CacheBudget): Long =
    budget.taskSlots.toLong * budget.threadsPerTask * math.max(0L, native.workingBytes - CacheBudget.WorkingReserveBytes)

  /**
   * The most a load may hold, while it loads and after: the native copy of the text, and beside it
   * the engine's trees and layout (up to about 1.6 times the text) or LightGBM's (about 0.7 times
   * the text and up to 1 KiB per tree: its trees' many small arrays outweigh the text of a tree of
   * a few leaves); an iteration range keeps its trees a second time (docs/tuning.md, "Sizing
   * native memory"). ModelCacheSuite checks it against each engine's peak.
   */
  def loadReserve(model: TreeModel, range: IterationRange): Long = {
    val text = model.text.length.toLong
    (if (range == IterationRange.All) 3 * text else 4 * text) + model.numTrees * LoadReservePerTreeBytes +
      LoadReserveFloorBytes
  }
  private val LoadReservePerTreeBytes = 1L << 10
  private val LoadReserveFloorBytes = 64L << 10

  /**
   * The most a model's TreeSHAP tables may keep: what the budget leaves once the model is loaded,
   * so that contributions never need more than the budget where the model alone fits. Leaves
   * left without a table replay their paths, with the same bits, only slower.
   */
  private def tableAddendsFor(model: TreeModel, range: IterationRange, budget: CacheBudget): Long =
    math.max(0L, budget.maxBytes - loadReserve(model, range)) / java.lang.Double.BYTES

  /** The TreeSHAP tables a call of `kind` builds on `engine`, as the driver estimates them. */
  private def tableRoom(model: TreeModel, engine: Engine, kind: PredictKind, maxAddends: Long): Long =
    if (engine == Engine.Treescore && kind == PredictKind.Contrib) model.shapTables.within(maxAddends).tableBytes else 0L

  // Insertion order doubles as recency order: a touched entry is removed and re-added.
  private val entries = mutable.LinkedHashMap.empty[Key, Entry]
  // Under the lock: admitted leases per task; the tasks waiting for room, each with the generation
  // it last looked at; and a generation that each return of room advances.
  private val leasesOf = mutable.HashMap.empty[Long, Int].withDefaultValue(0)
  private val waiting = mutable.HashMap.empty[Long, Long]
  private var generation = 0L

  /** Under the lock: room may have come back, so every waiting task looks again. */
  private def roomChanged(): Unit = { generation += 1; notifyAll() }
  @volatile private var budgetOverride: Option[Long] = None

  /** One model a task asks the cache for. */
  final case class Request(model: TreeModel, range: IterationRange, engine: Engine, kind: PredictKind)

  /**
   * Leases `model` loaded into `engine` for `range`, to compute `kind`; the lease says how long
   * loading took. Room for what `kind` will build is admitted before it is built.
   */
  def acquire(model: TreeModel, range: IterationRange, engine: Engine, kind: PredictKind): ModelLease =
    acquire(Request(model, range, engine, kind), currentTask)

  /**
   * Leases every model of `requests` together, as one call's members need them. Where waiting
   * for one member while holding the others could deadlock with another task, the task returns
   * what it holds of them, waits until room comes back, and asks again, rather than fail.
   */
  def acquireAll(requests: Seq[Request]): Seq[ModelLease] = {
    val task = currentTask
    var leases: Option[Seq[ModelLease]] = None
    while (leases.isEmpty) {
      val held = mutable.ArrayBuffer.empty[ModelLease]
      try {
        requests.foreach(r => held += acquire(r, task))
        leases = Some(held.toList)
      } catch {
        case e: Throwable =>
          held.foreach(_.close())
          e match {
            // Returning what it held lets the tasks that waited on it go on. Asking again at once
            // would lease the same loaded models before they could, and be refused again, for as
            // long as this thread wins the lock: so it first waits for them to change the room.
            case refused: NoRoomYet if held.nonEmpty && !refused.alone => synchronized {
              awaitRoom(task, generation, RetryPatienceMillis)
            }
            case refused: NoRoomYet if held.nonEmpty => synchronized {
              val budget = currentBudget
              throw new IllegalStateException(togetherOverBudget(togetherNeeds(requests, budget), budget))
            }
            case _ => throw e
          }
      }
    }
    leases.get
  }

  /**
   * The error every executor gives where one model of `requests` needs more than the budget with
   * nothing else loaded (its load's reserve, and the TreeSHAP tables a call builds); None where
   * each fits. The driver asks while it analyses a call, so that such a job fails before any task
   * runs. Where an executor's cores are not set, each executor's own processors decide its task
   * slots, so the driver assumes the fewest, one, which leaves the models the most room: it refuses
   * only what no executor can hold. Whether models that each fit also fit together depends on what
   * they hold once loaded, which only an executor knows.
   */
  def beyondBudget(requests: Seq[Request]): Option[String] = synchronized {
    val budget = withOverride(CacheBudget.largestOf(sparkConf))
    requests.groupBy(keyOf).iterator.map { case (key, same) => (key, same.map(needsAlone(_, budget)).max) }
      .collectFirst { case (key, needs) if needs > budget.maxBytes => overBudget(key, needs, budget) }
  }

  private def keyOf(request: Request): Key = Key(request.model.contentHash, request.range, request.engine)

  /** Under the lock: what `requests` need together with nothing else loaded, each model once. */
  private def togetherNeeds(requests: Seq[Request], budget: CacheBudget): Long =
    requests.groupBy(keyOf).valuesIterator.map(_.map(needsAlone(_, budget)).max).sum

  /** Under the lock: what `request`'s model needs with nothing else loaded, under `budget`. */
  private def needsAlone(request: Request, budget: CacheBudget): Long = {
    val Request(model, range, engine, kind) = request
    entries.get(keyOf(request)).fold(
      loadReserve(model, range) + tableRoom(model, engine, kind, tableAddendsFor(model, range, budget)))(_.needs(model, kind))
  }

  private def acquire(request: Request, task: Long): ModelLease = {
    val key = keyOf(request)
    var entry: Entry = null
    var admitted = false
    try {
      // One hold of the lock from taking the entry to its admission, so that no other task sees
      // it in use by a task that neither holds a lease nor waits.
      synchronized {
        entry = entries.remove(key).getOrElse(new Entry(key, tableAddendsFor(request.model, request.range, currentBudget)))
        entries.put(key, entry)
        entry.users += 1
        admit(entry, request.model, request.kind, task)
        leasesOf(task) += 1
        admitted = true
      }
      val (native, loadNanos) = entry.loaded(request.model)
      // The load may hold less than it reserved, and its calls may need working memory beyond
      // the slots' allowance, which is admitted before any call takes it.
      synchronized { admit(entry, request.model, request.kind, task); evictOverBudget(); roomChanged() }
      new ModelLease(native, loadNanos, () => release(entry, task, admitted = true))
    } catch {
      case e: Throwable =>
        if (entry != null) release(entry, task, admitted)
        throw e
    }
  }

  /** Who holds leases: the Spark task, or outside Spark the thread. */
  private def currentTask: Long = Option(TaskContext.get()).fold(-1L - Thread.currentThread().getId)(_.taskAttemptId())

  /**
   * The refusal of a task that holds models and would wait for room that only tasks waiting like
   * it could return. Released and asked again ([[acquireAll]]), or retried by Spark, it goes on.
   */
  final class NoRoomYet(message: String, val alone: Boolean) extends IllegalStateException(message)

  /** Under the lock: charges `entry` what `kind` needs, once that fits the budget (see the class). */
  private def admit(entry: Entry, model: TreeModel, kind: PredictKind, task: Long): Unit = {
    var admitted = false
    while (!admitted) {
      val budget = currentBudget
      val needs = entry.needs(model, kind)
      val others = entries.valuesIterator.filter(_ ne entry).map(_.bytes).sum
      if (others + needs <= budget.maxBytes || needs <= entry.bytes) admitted = true
      else {
        evictIdle(budget.maxBytes - needs + entry.bytes, s"a model needs ${CacheBudget.readable(needs)}")
        val inUse = entries.valuesIterator.filter(_ ne entry).map(_.bytes).sum
        if (inUse + needs <= budget.maxBytes) admitted = true
        else if (needs > budget.maxBytes) throw new IllegalStateException(overBudget(entry.key, needs, budget))
        else if (leasesOf(task) > 0 && !othersCanReturn(task)) {
          // Alone: what is in use is this task's, so waiting, or asking again, cannot help.
          throw new NoRoomYet(tooManyAtOnce(entry.key, needs, inUse, budget), alone = leasesOf.size == 1 && waiting.isEmpty)
        }
        else awaitRoom(task)
      }
    }
    entry.admit(model, kind)
  }

  /**
   * Under the lock: waits until room may have come back (the generation moves on from `since`),
   * or for at most `patienceMillis` where that is not 0. A task that holds no lease may always
   * wait: whoever holds the room goes on, or is refused and returns it.
   */
  private def awaitRoom(task: Long, since: Long = generation, patienceMillis: Long = 0L): Unit = {
    waiting(task) = since
    val deadline = System.nanoTime() + patienceMillis * 1000000L
    try {
      while (generation == since && (patienceMillis == 0L || System.nanoTime() < deadline)) {
        wait(if (patienceMillis == 0L) 0L else math.max(1L, (deadline - System.nanoTime()) / 1000000L))
      }
    } finally waiting -= task
  }

  // A task that returned its leases for others waits at most this long for them to change the
  // room before it asks again: the change it waits for may have come between the two.
  private val RetryPatienceMillis = 50L

  /**
   * Whether some other task holds a lease and will go on: it is not waiting for room, or room came
   * back since it last looked. Otherwise no lease will come back while this task waits.
   */
  private def othersCanReturn(task: Long): Boolean = leasesOf.exists { case (holder, leases) =>
    holder != task && leases > 0 && waiting.get(holder).forall(_ < generation)
  }

  private val SizingGuide = "docs/tuning.md, \"Sizing native memory\""

  // Only a load's reserve can exceed the budget alone: TreeSHAP tables take what it leaves.
  private def overBudget(key: Key, needs: Long, budget: CacheBudget): String =
    s"treescore: model ${key.contentHash.take(12)} (${key.range}, ${key.engine} engine) needs " +
      s"${CacheBudget.readable(needs)} of native memory, more than the model cache's budget of " +
      s"${CacheBudget.readable(budget.maxBytes)} (${budget.describe}). " +
      s"Raise spark.executor.memoryOverhead, or set ${TreescoreConf.CacheMaxBytes.key} to at least " +
      s"${CacheBudget.readable(needs + (1L << 20))} where the overhead holds it ($SizingGuide)."

  private def togetherOverBudget(together: Long, budget: CacheBudget): String =
    s"treescore: the models one task scores with together (every score call's, each ensemble, route or cascade " +
      "member included) need " +
      s"${CacheBudget.readable(together)} of native memory, more than the model cache's budget of " +
      s"${CacheBudget.readable(budget.maxBytes)} (${budget.describe}). Raise spark.executor.memoryOverhead, or set " +
      s"${TreescoreConf.CacheMaxBytes.key} to at least ${CacheBudget.readable(together + (1L << 20))} where the " +
      s"overhead holds it ($SizingGuide)."

  private def tooManyAtOnce(key: Key, needs: Long, inUse: Long, budget: CacheBudget): String =
    s"treescore: model ${key.contentHash.take(12)} (${key.range}, ${key.engine} engine) needs " +
      s"${CacheBudget.readable(needs)} of native memory, and the models in use on this executor hold " +
      s"${CacheBudget.readable(inUse)}: together more than the model cache's budget of " +
      s"${CacheBudget.readable(budget.maxBytes)} (${budget.describe}), and no other task can return its models " +
      "first. Size the budget for every model a job's tasks use at once (routes and ensembles count each member): " +
      s"raise spark.executor.memoryOverhead and ${TreescoreConf.CacheMaxBytes.key}, or run fewer tasks per " +
      s"executor ($SizingGuide)."

  private def release(entry: Entry, task: Long, admitted: Boolean): Unit = synchronized {
    entry.recharge()
    entry.users -= 1
    if (entry.users == 0 && !entry.isLoaded) entries.remove(entry.key) // its load failed, or never began
    if (admitted) {
      leasesOf(task) -= 1
      if (leasesOf(task) == 0) leasesOf -= task
    }
    evictOverBudget()
    roomChanged()
  }

  private def evictOverBudget(): Unit = {
    val budget = maxBytes
    evictIdle(budget, s"over the budget of ${budget >> 10} KiB")
  }

  /** Frees the least recently used models no task holds until all hold at most `target`. */
  private def evictIdle(target: Long, why: String): Unit = {
    var loadedBytes = entries.valuesIterator.map(_.bytes).sum
    val idle = entries.valuesIterator.filter(e => e.users == 0).toList // least recent first
    idle.iterator.takeWhile(_ => loadedBytes > target).foreach { e =>
      entries.remove(e.key)
      loadedBytes -= e.bytes
      evicted.incrementAndGet()
      e.free(s"the cache held ${(loadedBytes + e.bytes) >> 10} KiB; $why")
    }
  }

  private def maxBytes: Long = currentBudget.maxBytes

  /** The budget in bytes this JVM's cache keeps to now. */
  def budgetBytes: Long = maxBytes

  /** The budget of this JVM: from its Spark conf, or as in local mode outside Spark. */
  private def currentBudget: CacheBudget = withOverride(CacheBudget.of(sparkConf))

  private def sparkConf: SparkConf = Option(SparkEnv.get).map(_.conf).getOrElse(new SparkConf(false).setMaster("local"))

  private def withOverride(budget: CacheBudget): CacheBudget =
    budgetOverride.fold(budget)(bytes => budget.copy(configured = Some(bytes)))

  /** Models freed for the budget since this JVM started. */
  def evictions: Long = evicted.get()
  private val evicted = new java.util.concurrent.atomic.AtomicLong()

  /** Leases held right now, over all models; each task scorer returns its own when it closes. */
  def leasesHeld: Int = synchronized(entries.valuesIterator.map(_.users).sum)

  /** The cache's state, for a test that waited too long to say who held what. */
  private[treescore] def describe: String = synchronized {
    val held = entries.valuesIterator.map { e =>
      s"${e.key.contentHash.take(12)} (${e.key.range}, ${e.key.engine}): ${e.users} users, ${e.bytes} bytes" +
        (if (e.isLoaded) "" else ", not loaded")
    }.mkString("; ")
    s"budget ${maxBytes} bytes; models: $held; leases by task: ${leasesOf.mkString(", ")}; waiting since: " +
      s"${waiting.mkString(", ")}; generation $generation"
  }

  /** Models loaded in this JVM right now. */
  def loadedCount: Int = synchronized(entries.valuesIterator.count(_.isLoaded))

  /** Bytes charged against the budget right now: models loaded, and reserves for loads under way. */
  def loadedBytes: Long = synchronized(entries.valuesIterator.map(_.bytes).sum)

  /** Native bytes the models loaded in this JVM hold right now, as the native account counts them. */
  def heldBytes: Long = synchronized(entries.valuesIterator.map(_.held).sum)

  /** Sets the budget for this JVM, overriding the Spark conf; for tests. None restores the conf. */
  def setMaxBytesForTesting(bytes: Option[Long]): Unit = {
    budgetOverride = bytes
    synchronized { evictOverBudget(); roomChanged() }
  }

  /** As above, for callers that cannot build a Scala Option, such as Python's gateway. */
  def setMaxBytesForTesting(bytes: Long): Unit = setMaxBytesForTesting(Some(bytes))

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
