package treescore

import java.nio.file.{Files, Paths}

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.functions.col

import treescore.functions.score
import treescore.model.IterationRange
import treescore.nativelib.{ModelCache, NativeMemory}
import treescore.nativelib.NativeMethods

/**
 * 200 scoring jobs in one JVM, with a cache budget so small that every job reloads and evicts
 * its models: native memory must level off. Measured by the C allocator's own count of bytes
 * in use (glibc mallinfo2: LightGBM's models and treescore's buffers live there). Resident
 * memory is reported too, but JIT, metaspace and thread stacks make it swing by 100 MB
 * between samples here, too much to bound a leak with.
 */
class NativeMemorySuite extends SparkSuite {

  private val allowedGrowthBytes = 24L << 20 // one leaked batch buffer per job would add ~70 MB over 80 jobs

  private def residentBytes(): Long = Files.readAllLines(Paths.get("/proc/self/status")).asScala
    .collectFirst { case l if l.startsWith("VmRSS:") => l.split("\\s+")(1).toLong * 1024 }.get

  private def allocated(): Long = {
    System.gc()
    NativeMethods.allocatorInUseBytes()
  }

  test("native memory levels off over 200 jobs with reloads and evictions") {
    val frame = fixtureFrame.cache()
    frame.count()
    assert(NativeMethods.allocatorInUseBytes() >= 0, "the C allocator reports no statistics on this platform")
    // Room for one job's model at a time: each job's new iteration range evicts the last one.
    val partial = IterationRange(0, 5)
    ModelCache.setMaxBytesForTesting(Some(Seq(regressionModel, binaryModel).map(ModelCache.loadReserve(_, partial)).max))
    ModelCache.clear()
    val baselineModels = NativeMethods.liveModelCount()
    try {
      val samples = (1 to 200).flatMap { job =>
        val options = ScoreOptions(numIterations = 5 + job % 20) // a new iteration range: a new booster
        val sum = frame.select(score(if (job % 2 == 0) regressionModel else binaryModel, options).as("s"))
          .agg(org.apache.spark.sql.functions.sum(col("s"))).collect().head.getDouble(0)
        assert(!sum.isNaN)
        if (job % 10 == 0) Some(job -> allocated()) else None
      }.toMap
      // The JVM's own mallocs add transient spikes of +-15 MB; a leak raises the floor. So the
      // lowest reading of jobs 160-200 is compared with the lowest of jobs 80-120.
      val early = (80 to 120 by 10).map(samples).min
      val late = (160 to 200 by 10).map(samples).min
      println(f"native memory: C allocator in use, lowest of jobs 80-120 ${early / 1e6}%.1f MB, of jobs 160-200 " +
        f"${late / 1e6}%.1f MB (every 10 jobs: ${samples.toSeq.sorted.map(s => f"${s._2 / 1e6}%.0f").mkString(" ")} MB); " +
        f"resident ${residentBytes() / 1e6}%.0f MB")
      assert(late - early < allowedGrowthBytes, s"the C allocator's floor rose by ${(late - early) >> 20} MB over 80 jobs")
      assert(ModelCache.loadedCount == 1, "each job's model evicted the last one")
      ModelCache.clear()
      assert(NativeMethods.liveModelCount() == baselineModels, "every evicted model was freed")
    } finally {
      ModelCache.setMaxBytesForTesting(None)
      frame.unpersist()
    }
  }

  test("the native account returns to what the cached models hold after every task, failed ones included") {
    val frame = fixtureFrame.cache()
    frame.count()
    val failAt = org.apache.spark.sql.functions.udf { (s: Double) =>
      if (s > 0.9) throw new IllegalStateException("a failure after scoring"); s
    }
    def settled(when: String): Unit = {
      val held = NativeMemory.held()
      val models = ModelCache.heldBytes
      println(f"native account $when: ${held.byKind.map { case (k, v) => s"$k ${v >> 10} KiB" }.mkString(", ")}; " +
        f"peak ${held.peak >> 10} KiB; cached models hold ${models >> 10} KiB")
      assert(held("buffers") == 0, s"$when: task buffers outlive their tasks")
      assert(held("programs") == 0, s"$when: programs outlive their tasks")
      assert(held("models") == models, s"$when: the models kind holds ${held("models")} bytes, the cached models $models")
      assert(held.peak >= held.total)
    }
    try {
      for (kind <- Seq("prediction", "raw", "leaf", "contrib"); engine <- Seq("lightgbm", "treescore")) {
        val options = ScoreOptions(kind = kind, numIterations = 7)
        withEngine(engine)(frame.select(score(binaryModel, options).as("s")).collect())
      }
      settled("after every kind on both engines")
      val failed = intercept[Exception](frame.select(failAt(score(binaryModel)).as("s")).collect())
      assert(failed.getMessage.contains("a failure after scoring"), failed.getMessage)
      settled("after a failed task")
    } finally frame.unpersist()
  }

  private def withEngine[T](engine: String)(body: => T): T = {
    val key = TreescoreConf.EngineChoice.key
    val before = spark.conf.getOption(key)
    spark.conf.set(key, engine)
    try body finally before.fold(spark.conf.unset(key))(spark.conf.set(key, _))
  }
}
