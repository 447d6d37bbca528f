package treescore

import java.util.concurrent.{Callable, Executors}

import scala.jdk.CollectionConverters._

import org.apache.spark.{SparkConf, SparkEnv}
import org.scalatest.funsuite.AnyFunSuite

import treescore.model.{Engine, IterationRange, PredictKind, TreeModel}
import treescore.nativelib.{CacheBudget, FeatureColumns, ModelCache, NativeMemory, NativeModel, OffHeapDoubles}
import treescore.nativelib.NativeMethods

/** The executor cache under concurrency and a budget too small to hold its models. */
class ModelCacheSuite extends AnyFunSuite {

  private def fixtureText(name: String): String = {
    val source = scala.io.Source.fromResource(s"fixtures/$name.txt")
    try source.mkString finally source.close()
  }

  private def fixture(name: String): TreeModel = TreeModel.fromString(fixtureText(name))

  /** A fixture's trees `copies` times over, numbered anew (without tree_sizes, which is optional). */
  private def repeatedTrees(copies: Int, name: String = "regression"): TreeModel = {
    val text = fixtureText(name)
    val (first, end) = (text.indexOf("Tree="), text.indexOf("end of trees"))
    val header = text.substring(0, first).linesIterator.filterNot(_.startsWith("tree_sizes=")).mkString("", "\n", "\n\n")
    val trees = text.substring(first, end).split("(?m)^(?=Tree=)").toSeq
    val body = Seq.fill(copies)(trees).flatten.zipWithIndex.map { case (tree, i) => tree.replaceFirst("^Tree=\\d+", s"Tree=$i") }
    TreeModel.fromString(header + body.mkString + text.substring(end))
  }

  private lazy val models = Seq(fixture("regression"), fixture("binary"))
  private val ranges = Seq(IterationRange.All, IterationRange(3, 7))

  private def scoreAll(model: TreeModel, range: IterationRange, rows: Array[Array[Double]],
      engine: Engine = Engine.LightGbm): Seq[Long] = {
    val lease = ModelCache.acquire(model, range, engine, PredictKind.Prediction)
    val in = new OffHeapDoubles(rows.length * 6L)
    val out = new OffHeapDoubles(rows.length)
    try {
      for (i <- rows.indices; j <- 0 until 6) in.put(i * 6L + j, rows(i)(j))
      val columns = FeatureColumns.rowMajor(in, rows.length, 6)
      try lease.model.predict(columns, PredictKind.Prediction, 1, out) finally columns.close()
      (0 until rows.length).map(i => java.lang.Double.doubleToRawLongBits(out.get(i)))
    } finally { in.close(); out.close(); lease.close() }
  }

  test("threads that together need more than the budget wait for room, never exceed it, and score exactly") {
    ModelCache.clear()
    val baseline = NativeMethods.liveModelCount()
    val rng = new scala.util.Random(9)
    val rows = Array.fill(300)(Array.fill(6)(rng.nextGaussian()))
    val cases = for (m <- models; r <- ranges) yield (m, r)
    val expected = cases.map { case (m, r) => (m, r) -> scoreAll(m, r, rows) }.toMap
    // Room for the largest single load, never for two: every thread but one waits its turn.
    val budget = cases.map { case (m, r) => ModelCache.loadReserve(m, r) }.max
    ModelCache.clear()
    ModelCache.setMaxBytesForTesting(Some(budget))
    val evictedBefore = ModelCache.evictions
    val pool = Executors.newFixedThreadPool(8)
    @volatile var scoring = true
    var mostCharged = 0L
    val watcher = new Thread(() => while (scoring) mostCharged = math.max(mostCharged, ModelCache.loadedBytes))
    watcher.start()
    try {
      val tasks = (0 until 64).map(i => new Callable[Boolean] {
        def call(): Boolean = {
          val (m, r) = cases(i % cases.length)
          scoreAll(m, r, rows) == expected((m, r))
        }
      })
      val outcomes = pool.invokeAll(tasks.asJava).asScala.map(_.get())
      scoring = false
      watcher.join()
      assert(outcomes.forall(identity))
      assert(mostCharged > 0 && mostCharged <= budget, s"charged at most the budget of $budget bytes: $mostCharged")
      assert(ModelCache.evictions > evictedBefore && ModelCache.loadedBytes <= budget && ModelCache.leasesHeld == 0)
      ModelCache.clear()
      assert(NativeMethods.liveModelCount() == baseline)
    } finally {
      scoring = false
      pool.shutdown()
      ModelCache.setMaxBytesForTesting(None)
    }
  }

  test("tasks that each lease a call's two models together wait for room, never deadlock and never fail") {
    ModelCache.clear()
    val cases = for (m <- models; r <- ranges; e <- Seq(Engine.LightGbm, Engine.Treescore))
      yield ModelCache.Request(m, r, e, PredictKind.Prediction)
    // Room for one task's pair, not for two tasks each holding one model and asking for the next.
    val held = cases.map { r =>
      val lease = ModelCache.acquire(r.model, r.range, r.engine, r.kind)
      try lease.model.heldBytes finally lease.close()
    }
    val budget = held.max + cases.map(r => ModelCache.loadReserve(r.model, r.range)).max
    ModelCache.clear()
    assert(ModelCache.leasesHeld == 0, s"leases held before the tasks start: ${ModelCache.describe}")
    ModelCache.setMaxBytesForTesting(Some(budget))
    val pool = Executors.newFixedThreadPool(6)
    try {
      val tasks = (0 until 48).map(i => new Callable[Boolean] {
        def call(): Boolean = {
          val pair = Seq(cases(i % cases.length), cases((i + 1 + i / cases.length) % cases.length))
          val leases = ModelCache.acquireAll(pair)
          try leases.forall(_.model.heldBytes > 0) && ModelCache.loadedBytes <= budget
          finally {
            leases.foreach(_.close())
            ModelCache.clear() // every task loads again: their reserves contend for the budget
          }
        }
      })
      val futures = pool.invokeAll(tasks.asJava, 120, java.util.concurrent.TimeUnit.SECONDS).asScala
      assert(!futures.exists(_.isCancelled), s"tasks still waiting after 120 s: ${ModelCache.describe}")
      assert(futures.map(_.get()).forall(identity), "every task got both models, within the budget")
      assert(ModelCache.leasesHeld == 0 && ModelCache.loadedBytes <= budget)
    } finally {
      pool.shutdown()
      ModelCache.setMaxBytesForTesting(None)
    }
  }

  test("one call's models that together need more than the budget are refused with an error, not a wait") {
    ModelCache.clear()
    val pair = models.map(ModelCache.Request(_, IterationRange.All, Engine.LightGbm, PredictKind.Prediction))
    ModelCache.setMaxBytesForTesting(Some(pair.map(r => ModelCache.loadReserve(r.model, r.range)).max))
    try {
      val error = intercept[IllegalStateException](ModelCache.acquireAll(pair))
      assert(error.getMessage.contains("the models one task scores with together"), error.getMessage)
      assert(ModelCache.leasesHeld == 0)
    } finally ModelCache.setMaxBytesForTesting(None)
  }

  test("a load holds no more than the room reserved for it, while it loads and after, in either engine and over any range") {
    // The stumps' trees are a few hundred bytes of text each, less than LightGBM keeps of each.
    val stumps = repeatedTrees(20, "stumps")
    for (model <- models :+ fixture("linear") :+ stumps; range <- ranges; engine <- Seq(Engine.Treescore, Engine.LightGbm)) {
      ModelCache.clear()
      NativeMethods.takeThreadPeak()
      val before = NativeMemory.held().total
      val lease = ModelCache.acquire(model, range, engine, PredictKind.Prediction)
      try {
        val peak = NativeMethods.takeThreadPeak() - before
        val held = lease.model.heldBytes
        val reserve = ModelCache.loadReserve(model, range)
        assert(held > 0 && held <= reserve, s"$model, $range, $engine: $held bytes")
        assert(peak <= reserve, s"$model, $range, $engine: the load held $peak bytes at once")
      } finally lease.close()
    }
  }

  test("a model that alone needs more than the budget is refused, naming both sizes, and nothing leaks") {
    ModelCache.clear()
    val baseline = NativeMethods.liveModelCount()
    ModelCache.setMaxBytesForTesting(Some(100L << 10))
    try {
      val error = intercept[IllegalStateException] {
        ModelCache.acquire(models.head, IterationRange.All, Engine.Treescore, PredictKind.Prediction)
      }
      val needs = ModelCache.loadReserve(models.head, IterationRange.All)
      assert(error.getMessage.contains(s"needs ${needs >> 10} KiB of native memory"), error.getMessage)
      assert(error.getMessage.contains("budget of 100 KiB (spark.treescore.cache.maxBytes=100 KiB)"), error.getMessage)
      assert(error.getMessage.contains("spark.executor.memoryOverhead"), error.getMessage)
      assert(ModelCache.leasesHeld == 0 && ModelCache.loadedBytes == 0)
      assert(NativeMethods.liveModelCount() == baseline)
    } finally ModelCache.setMaxBytesForTesting(None)
  }

  test("a task that alone holds more than the budget at once is refused, not left waiting for itself") {
    ModelCache.clear()
    val (first, second) = (models(0), models(1))
    try {
      val held = ModelCache.acquire(first, IterationRange.All, Engine.LightGbm, PredictKind.Prediction)
      ModelCache.setMaxBytesForTesting(Some(ModelCache.loadedBytes + ModelCache.loadReserve(second, IterationRange.All) - 1))
      try {
        val error = intercept[IllegalStateException] {
          ModelCache.acquire(second, IterationRange.All, Engine.LightGbm, PredictKind.Prediction)
        }
        assert(error.getMessage.contains("no other task can return its models first"), error.getMessage)
        assert(ModelCache.leasesHeld == 1)
      } finally held.close()
      // Held by another task, the first model's room comes back: this one waits for it, then loads.
      ModelCache.clear()
      val other = ModelCache.acquire(first, IterationRange.All, Engine.LightGbm, PredictKind.Prediction)
      val waiter = Executors.newSingleThreadExecutor()
      try {
        val pending = waiter.submit(new Callable[Long] {
          def call(): Long = {
            val lease = ModelCache.acquire(second, IterationRange.All, Engine.LightGbm, PredictKind.Prediction)
            try lease.model.heldBytes finally lease.close()
          }
        })
        Thread.sleep(300)
        assert(!pending.isDone, "it waits while the other task holds its model")
        other.close()
        assert(pending.get() > 0)
      } finally waiter.shutdown()
    } finally ModelCache.setMaxBytesForTesting(None)
  }

  test("a held model is never freed, even once over a lowered budget, and is freed once released") {
    ModelCache.clear()
    val baseline = NativeMethods.liveModelCount()
    try {
      val lease = ModelCache.acquire(models.head, IterationRange.All, Engine.LightGbm, PredictKind.Prediction)
      ModelCache.setMaxBytesForTesting(Some(1L))
      assert(ModelCache.loadedCount == 1)
      val rows = Array(Array.fill(6)(0.25))
      assert(scoreAll(models.head, IterationRange.All, rows).length == 1) // shares the held model
      assert(NativeMethods.liveModelCount() == baseline + 1)
      lease.close()
      lease.close() // a second close is harmless
      assert(NativeMethods.liveModelCount() == baseline)
    } finally ModelCache.setMaxBytesForTesting(None)
  }

  test("within budget, a model stays loaded across leases") {
    ModelCache.clear()
    val first = ModelCache.acquire(models.head, IterationRange.All, Engine.LightGbm, PredictKind.Prediction)
    val loadNanos = first.loadNanos
    first.close()
    val second = ModelCache.acquire(models.head, IterationRange.All, Engine.LightGbm, PredictKind.Prediction)
    try {
      assert(loadNanos > 0)
      assert(second.loadNanos == 0)
    } finally second.close()
  }

  test("a model loaded into each engine is two cache entries that give the same bits") {
    ModelCache.clear()
    val rng = new scala.util.Random(9)
    val specials = Array(Double.NaN, 0.0, -0.0, Double.PositiveInfinity, Double.NegativeInfinity, 1e-36, Double.MinPositiveValue)
    val rows = Array.fill(300)(Array.fill(6)(if (rng.nextInt(4) == 0) specials(rng.nextInt(specials.length)) else rng.nextGaussian()))
    for (model <- models; range <- ranges) {
      val lease = ModelCache.acquire(model, range, Engine.Treescore, PredictKind.Prediction)
      try {
        assert(lease.model.engine == Engine.Treescore)
        assert(scoreAll(model, range, rows, Engine.Treescore) == scoreAll(model, range, rows, Engine.LightGbm))
      } finally lease.close()
    }
    assert(ModelCache.loadedCount == models.length * ranges.length * 2)
  }

  test("a model is charged the native bytes it holds, with room for TreeSHAP tables made before they are built") {
    ModelCache.clear()
    val model = models.head
    val tables = model.shapTables.tableBytes
    assert(tables > 0)
    def leased[T](engine: Engine, kind: PredictKind)(body: NativeModel => T): T = {
      val lease = ModelCache.acquire(model, IterationRange.All, engine, kind)
      try body(lease.model) finally lease.close()
    }
    val engineLoad = leased(Engine.Treescore, PredictKind.Prediction)(_.heldBytes)
    assert(engineLoad > model.text.length / 4, "the engine's trees and layout")
    assert(ModelCache.loadedBytes == engineLoad)
    val lightGbmLoad = leased(Engine.LightGbm, PredictKind.Contrib) { native =>
      contributions(native)
      native.heldBytes
    }
    assert(lightGbmLoad > model.text.length / 4, "LightGBM's trees")
    assert(ModelCache.loadedBytes == engineLoad + lightGbmLoad, "LightGBM builds no tables")
    val withTables = leased(Engine.Treescore, PredictKind.Contrib) { native =>
      assert(ModelCache.loadedBytes == engineLoad + tables + lightGbmLoad, "room is made before the tables are built")
      contributions(native)
      native.heldBytes
    }
    assert(withTables > engineLoad, "the tables stay with the model")
    assert(withTables - engineLoad >= tables && withTables - engineLoad <= tables + tables / 8 + (64L << 10),
      s"the driver's estimate of $tables bytes is what the tables hold: ${withTables - engineLoad}")
    assert(ModelCache.loadedBytes == math.max(withTables, engineLoad + tables) + lightGbmLoad)
    ModelCache.setMaxBytesForTesting(Some(ModelCache.loadedBytes - 1))
    try assert(ModelCache.loadedCount == 1, "over budget, the least recently used idle model is freed")
    finally ModelCache.setMaxBytesForTesting(None)
  }

  test("a model whose calls need more than a slot's working allowance is charged the rest for every task slot") {
    ModelCache.clear()
    for (engine <- Seq(Engine.Treescore, Engine.LightGbm)) {
      val lease = ModelCache.acquire(models.head, IterationRange.All, engine, PredictKind.Prediction)
      try assert(lease.model.workingBytes == CacheBudget.WorkingReserveBytes, s"an ordinary model on $engine")
      finally lease.close()
    }
    val model = repeatedTrees(200) // 6,000 trees: a leaf set and a value per tree and block row outgrow the scratch share
    val rng = new scala.util.Random(5)
    val rows = Array.fill(40)(Array.fill(6)(rng.nextGaussian()))
    ModelCache.clear()
    assert(scoreAll(model, IterationRange.All, rows, Engine.Treescore) == scoreAll(model, IterationRange.All, rows, Engine.LightGbm))
    val lease = ModelCache.acquire(model, IterationRange.All, Engine.Treescore, PredictKind.Prediction)
    try {
      val beyond = lease.model.workingBytes - CacheBudget.WorkingReserveBytes
      assert(beyond > 0, s"${lease.model.workingBytes} bytes fit the allowance: the test shows nothing")
      val conf = Option(SparkEnv.get).map(_.conf).getOrElse(new SparkConf(false).setMaster("local"))
      val budget = CacheBudget.of(conf)
      val threads = budget.taskSlots * budget.threadsPerTask
      assert(ModelCache.loadedBytes == ModelCache.heldBytes + threads * beyond,
        s"the calls of $threads threads of task slots may each need $beyond bytes beyond the allowance")
    } finally lease.close()
  }

  test("under a small budget, TreeSHAP tables keep what the load leaves and other leaves replay: same bits") {
    ModelCache.clear()
    val model = models.head
    val reserve = ModelCache.loadReserve(model, IterationRange.All)
    val full = model.shapTables
    def leased[T](engine: Engine, kind: PredictKind)(body: NativeModel => T): T = {
      val lease = ModelCache.acquire(model, IterationRange.All, engine, kind)
      try body(lease.model) finally lease.close()
    }
    val lightGbm = leased(Engine.LightGbm, PredictKind.Contrib)(contributions)
    ModelCache.clear()
    val budget = reserve + full.tableBytes / 2
    ModelCache.setMaxBytesForTesting(Some(budget))
    try {
      val kept = full.within((budget - reserve) / java.lang.Double.BYTES)
      assert(0 < kept.tableAddends && kept.tableAddends < full.tableAddends && kept.replayedLeaves > full.replayedLeaves,
        s"$kept against $full")
      val engineLoad = leased(Engine.Treescore, PredictKind.Prediction)(_.heldBytes)
      val (bits, withTables) = leased(Engine.Treescore, PredictKind.Contrib)(native => (contributions(native), native.heldBytes))
      assert(bits == lightGbm, "leaves without a table give LightGBM's bits too")
      val tables = withTables - engineLoad
      assert(tables >= kept.tableBytes && tables <= kept.tableBytes + kept.tableBytes / 8 + (64L << 10),
        s"the driver's estimate of ${kept.tableBytes} bytes is what the tables hold: $tables")
      assert(ModelCache.loadedBytes <= budget)
    } finally ModelCache.setMaxBytesForTesting(None)
  }

  /** The bits of 50 rows' contributions. */
  private def contributions(native: NativeModel): Seq[Long] = {
    val rows = 50
    val in = new OffHeapDoubles(rows * 6L)
    val out = new OffHeapDoubles(rows * native.outputsPerRow(PredictKind.Contrib).toLong)
    try {
      for (i <- 0L until rows * 6L) in.put(i, (i % 13) / 7.0 - 1.0)
      val columns = FeatureColumns.rowMajor(in, rows, 6)
      try native.predict(columns, PredictKind.Contrib, 1, out) finally columns.close()
      (0L until rows * native.outputsPerRow(PredictKind.Contrib)).map(i => java.lang.Double.doubleToRawLongBits(out.get(i)))
    } finally { in.close(); out.close() }
  }
}
