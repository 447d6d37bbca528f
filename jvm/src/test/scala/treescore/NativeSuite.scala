package treescore

import java.util.concurrent.{Callable, Executors}

import scala.jdk.CollectionConverters._

import org.scalatest.funsuite.AnyFunSuite

import treescore.model.{Engine, IterationRange, PredictKind, TreeModel}
import treescore.nativelib.{FeatureColumns, ModelCache, NativeModel, OffHeapDoubles}
import treescore.nativelib.{NativeException, NativeLoader, NativeMethods}

/** The JNI boundary: loading, handles, errors and concurrent use. */
class NativeSuite extends AnyFunSuite {

  private lazy val model: TreeModel = {
    val source = scala.io.Source.fromResource("fixtures/binary.txt")
    try TreeModel.fromString(source.mkString) finally source.close()
  }

  private def predictOne(native: NativeModel, row: Array[Double]): Double = {
    val in = new OffHeapDoubles(row.length)
    val out = new OffHeapDoubles(1)
    try {
      row.indices.foreach(i => in.put(i, row(i)))
      val columns = FeatureColumns.rowMajor(in, 1, row.length)
      try native.predict(columns, PredictKind.Prediction, 1, out) finally columns.close()
      out.get(0)
    } finally { in.close(); out.close() }
  }

  test("the libraries load from the jar's platform folder and leave no files behind") {
    NativeLoader.ensureLoaded()
    val tmp = new java.io.File(System.getProperty("java.io.tmpdir"))
    assert(Option(tmp.list()).toSeq.flatten.forall(!_.startsWith("treescore-native-")))
    assert(NativeLoader.platform.matches("[a-z]+/[a-z0-9_]+"))
  }

  test("LightGBM is linked into treescore's one library, so no other LightGBM in the JVM can stand in for it") {
    NativeLoader.ensureLoaded()
    val maps = new String(java.nio.file.Files.readAllBytes(java.nio.file.Paths.get("/proc/self/maps")))
    // address, permissions, offset, device, inode, then the path (" (deleted)": the loader removes its files)
    val mapped = maps.linesIterator.map(_.split("\\s+", 6)).filter(_.length == 6).map(_(5).stripSuffix(" (deleted)")).toSet
    assert(mapped.exists(_.endsWith("/libtreescore_jni.so")), mapped)
    assert(!mapped.exists(p => p.contains("lightgbm") || p.contains("libgomp")), mapped)
  }

  test("a platform the jar has no libraries for is named in the error, with its glibc and the supported ones") {
    val e = intercept[UnsatisfiedLinkError](NativeLoader.loadAll("plan9/mips"))
    // ldd's first line ends with the glibc release, e.g. "ldd (Debian GLIBC 2.36-9+deb12u4) 2.36".
    val glibc = scala.sys.process.Process(Seq("ldd", "--version")).!!.linesIterator.next().split(" ").last
    assert(e.getMessage.startsWith(s"treescore has no native library for this platform: plan9/mips (glibc $glibc; os.name="),
      e.getMessage)
    assert(e.getMessage.endsWith("treescore's native libraries are for: " +
      "linux/aarch64 with glibc 2.17 or newer, linux/x86_64 with glibc 2.17 or newer"), e.getMessage)
  }

  test("LightGBM's own errors arrive as NativeException with its message") {
    NativeLoader.ensureLoaded()
    val e = intercept[NativeException](NativeMethods.loadModel("tree\nnot really\n".getBytes, Engine.LightGbm.code, 0L))
    assert(e.getMessage.startsWith("LGBM_BoosterLoadModelFromString failed: "), e.getMessage)
  }

  test("treescore's engine refuses text it cannot read with an IllegalArgumentException naming the problem") {
    NativeLoader.ensureLoaded()
    val e = intercept[IllegalArgumentException](NativeMethods.loadModel("tree\nnot really\n".getBytes, Engine.Treescore.code, 0L))
    assert(e.getMessage.contains("treescore engine: the model text has no whole iterations of trees"), e.getMessage)
    val unknown = intercept[IllegalArgumentException](NativeMethods.loadModel("tree\n".getBytes, 7, 0L))
    assert(unknown.getMessage.contains("unknown engine code 7"), unknown.getMessage)
  }

  test("a released handle is an IllegalStateException, not a crash") {
    val native = NativeModel.load(model, IterationRange.All, Engine.LightGbm)
    native.close()
    native.close() // closing twice is harmless
    val e = intercept[IllegalStateException](predictOne(native, Array.fill(6)(0.5)))
    assert(e.getMessage.contains("is not live"), e.getMessage)
  }

  test("a batch that does not fit its buffer is refused before LightGBM reads it") {
    val native = NativeModel.load(model, IterationRange.All, Engine.LightGbm)
    val in = new OffHeapDoubles(6)
    val out = new OffHeapDoubles(2)
    try {
      val e = intercept[IllegalArgumentException](FeatureColumns.rowMajor(in, 2, native.numFeatures))
      assert(e.getMessage == "a batch of 2 x 6 does not fit the 6 doubles passed")
    } finally { in.close(); out.close(); native.close() }
  }

  test("many threads share one cached model and agree with a single thread bit for bit") {
    ModelCache.clear()
    val rng = new scala.util.Random(5)
    val rows = Array.fill(400)(Array.fill(6)(rng.nextGaussian()))
    val first = ModelCache.acquire(model, IterationRange.All, Engine.LightGbm, PredictKind.Prediction)
    val expected = rows.map(r => predictOne(first.model, r))
    val pool = Executors.newFixedThreadPool(8)
    try {
      val tasks = (1 to 16).map(_ => new Callable[Seq[Double]] {
        def call(): Seq[Double] = {
          val lease = ModelCache.acquire(model, IterationRange.All, Engine.LightGbm, PredictKind.Prediction)
          try rows.toSeq.map(r => predictOne(lease.model, r)) finally lease.close()
        }
      })
      val results = pool.invokeAll(tasks.asJava).asScala.map(_.get())
      results.foreach(r => assert(r.map(java.lang.Double.doubleToRawLongBits) ==
        expected.toSeq.map(java.lang.Double.doubleToRawLongBits)))
      assert(ModelCache.loadedCount == 1)
    } finally { pool.shutdown(); first.close() }
  }

  test("clearing the cache frees the native models no task holds") {
    ModelCache.clear()
    val before = NativeMethods.liveModelCount()
    val held = ModelCache.acquire(model, IterationRange.All, Engine.LightGbm, PredictKind.Prediction)
    assert(NativeMethods.liveModelCount() == before + 1)
    ModelCache.clear()
    assert(NativeMethods.liveModelCount() == before + 1, "a held model must survive clear()")
    held.close()
    ModelCache.clear()
    assert(NativeMethods.liveModelCount() == before)
  }
}
