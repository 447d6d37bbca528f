package treescore

import java.nio.file.{Files, Paths}

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.functions.col

import treescore.functions.score
import treescore.model.ModelCache
import treescore.nativelib.NativeMethods

/**
 * 200 scoring jobs in one JVM, with a cache budget so small that every job reloads and evicts
 * its models: native memory must level off. Measured by the C allocator's own count of bytes
 * in use (glibc mallinfo2: LightGBM's models and treescore's buffers live there), after a
 * warm-up of 80 jobs (Spark's own allocations settle by then). Resident memory is reported too, but JIT, metaspace and thread stacks
 * make it swing by 100 MB between samples here, too much to bound a leak with.
 */
class NativeMemorySuite extends SparkSuite {

  private val allowedGrowthBytes = 8L << 20 // one leaked batch buffer per job would add ~90 MB

  private def residentBytes(): Long = Files.readAllLines(Paths.get("/proc/self/status")).asScala
    .collectFirst { case l if l.startsWith("VmRSS:") => l.split("\\s+")(1).toLong * 1024 }.get

  private def allocated(): Long = {
    System.gc()
    NativeMethods.allocatorInUseBytes()
  }

  test("native memory levels off over 200 jobs with reloads and evictions") {
    val frame = fixtureFrame.cache()
    frame.count()
    ModelCache.setMaxBytesForTesting(Some(1L))
    val baselineModels = NativeMethods.liveModelCount()
    assume(NativeMethods.allocatorInUseBytes() >= 0, "this platform's allocator reports no statistics")
    try {
      var afterWarmUp = 0L
      val samples = (1 to 200).map { job =>
        val options = ScoreOptions(numIterations = 5 + job % 20) // a new iteration range: a new booster
        val sum = frame.select(score(if (job % 2 == 0) regressionModel else binaryModel, options).as("s"))
          .agg(org.apache.spark.sql.functions.sum(col("s"))).collect().head.getDouble(0)
        assert(!sum.isNaN)
        if (job == 80) afterWarmUp = allocated()
        if (job % 40 == 0) allocated() else 0L
      }.filter(_ > 0)
      val end = allocated()
      println(f"native memory: C allocator in use after 80 jobs ${afterWarmUp / 1e6}%.1f MB, after 200 ${end / 1e6}%.1f MB " +
        s"(every 40 jobs: ${samples.map(s => f"${s / 1e6}%.1f").mkString(", ")} MB); resident ${residentBytes() / 1e6} MB")
      assert(end - afterWarmUp < allowedGrowthBytes,
        s"the C allocator's bytes in use grew by ${(end - afterWarmUp) >> 20} MB over 120 jobs")
      assert(NativeMethods.liveModelCount() == baselineModels, "every evicted model was freed")
    } finally {
      ModelCache.setMaxBytesForTesting(None)
      frame.unpersist()
    }
  }
}
