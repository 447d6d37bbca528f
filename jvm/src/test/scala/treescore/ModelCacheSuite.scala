package treescore

import java.util.concurrent.{Callable, Executors}

import scala.jdk.CollectionConverters._

import org.scalatest.funsuite.AnyFunSuite

import treescore.model.{Engine, IterationRange, PredictKind, TreeModel}
import treescore.nativelib.{FeatureColumns, ModelCache, NativeModel, OffHeapDoubles}
import treescore.nativelib.NativeMethods

/** The executor cache under concurrency and a budget too small to hold its models. */
class ModelCacheSuite extends AnyFunSuite {

  private def fixture(name: String): TreeModel = {
    val source = scala.io.Source.fromResource(s"fixtures/$name.txt")
    try TreeModel.fromString(source.mkString) finally source.close()
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

  test("models evicted under a tiny budget while other threads score still give single-threaded results") {
    ModelCache.clear()
    val baseline = NativeMethods.liveModelCount()
    val rng = new scala.util.Random(9)
    val rows = Array.fill(300)(Array.fill(6)(rng.nextGaussian()))
    val cases = for (m <- models; r <- ranges) yield (m, r)
    val expected = cases.map { case (m, r) => (m, r) -> scoreAll(m, r, rows) }.toMap
    ModelCache.setMaxBytesForTesting(Some(1L)) // every idle model is freed at once
    val pool = Executors.newFixedThreadPool(8)
    try {
      val tasks = (0 until 64).map(i => new Callable[Boolean] {
        def call(): Boolean = {
          val (m, r) = cases(i % cases.length)
          scoreAll(m, r, rows) == expected((m, r))
        }
      })
      val outcomes = pool.invokeAll(tasks.asJava).asScala.map(_.get())
      assert(outcomes.forall(identity))
      assert(ModelCache.loadedCount == 0, "idle models over the budget are freed")
      assert(NativeMethods.liveModelCount() == baseline)
    } finally {
      pool.shutdown()
      ModelCache.setMaxBytesForTesting(None)
    }
  }

  test("a held model is never freed, even over budget, and is freed once released") {
    ModelCache.clear()
    val baseline = NativeMethods.liveModelCount()
    ModelCache.setMaxBytesForTesting(Some(1L))
    try {
      val lease = ModelCache.acquire(models.head, IterationRange.All, Engine.LightGbm, PredictKind.Prediction)
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
    assert(ModelCache.loadedBytes == math.max(withTables, engineLoad + tables) + lightGbmLoad)
    ModelCache.setMaxBytesForTesting(Some(ModelCache.loadedBytes - 1))
    try assert(ModelCache.loadedCount == 1, "over budget, the least recently used idle model is freed")
    finally ModelCache.setMaxBytesForTesting(None)
  }

  private def contributions(native: NativeModel): Unit = {
    val rows = 50
    val in = new OffHeapDoubles(rows * 6L)
    val out = new OffHeapDoubles(rows * native.outputsPerRow(PredictKind.Contrib).toLong)
    try {
      for (i <- 0L until rows * 6L) in.put(i, (i % 13) / 7.0 - 1.0)
      val columns = FeatureColumns.rowMajor(in, rows, 6)
      try native.predict(columns, PredictKind.Contrib, 1, out) finally columns.close()
    } finally { in.close(); out.close() }
  }
}
