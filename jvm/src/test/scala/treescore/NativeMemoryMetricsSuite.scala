package treescore

import java.lang.management.ManagementFactory
import javax.management.ObjectName

import scala.jdk.CollectionConverters._

import org.apache.spark.SparkConf
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.functions.desc

import treescore.functions.score
import treescore.nativelib.{CacheBudget, ModelCache, NativeMemory}
import treescore.wire.WireCodes

/**
 * treescore's native memory as Spark reports it: the plugin's gauges through a metrics sink
 * (JMX here), the batched operator's peak, and the budget an executor's overhead allows.
 */
class NativeMemoryMetricsSuite extends SparkSuite {

  override lazy val spark: SparkSession = SparkSession.builder()
    .master("local[2]")
    .appName(getClass.getSimpleName)
    .config("spark.sql.extensions", classOf[TreescoreExtensions].getName)
    .config("spark.plugins", classOf[TreescorePlugin].getName)
    .config("spark.metrics.conf.*.sink.jmx.class", "org.apache.spark.metrics.sink.JmxSink")
    .config("spark.ui.enabled", "false")
    .config("spark.driver.host", "127.0.0.1")
    .config("spark.driver.bindAddress", "127.0.0.1")
    .getOrCreate()

  private def gauge(name: String): Long = {
    val server = ManagementFactory.getPlatformMBeanServer
    val found = server.queryNames(new ObjectName(s"metrics:name=*plugin.treescore.TreescorePlugin.$name,*"), null).asScala
    assert(found.size == 1, s"one JMX bean for $name, found ${found.mkString(", ")}")
    server.getAttribute(found.head, "Value").asInstanceOf[Long]
  }

  test("the plugin's gauges report the native account, the cache and its budget through a metrics sink") {
    fixtureFrame.select(score(binaryModel).as("s")).collect()
    val held = NativeMemory.held()
    for (kind <- WireCodes.NativeMemory.names if kind != "working") {
      assert(gauge(s"nativeMemory.$kind") == held(kind), kind) // working memory moves with any call
    }
    assert(gauge("nativeMemory.models") >= ModelCache.heldBytes && ModelCache.heldBytes > 0)
    assert(gauge("nativeMemory.peak") >= gauge("nativeMemory.total"))
    assert(gauge("models.loaded") == ModelCache.loadedCount)
    assert(gauge("models.evictions") == ModelCache.evictions)
    assert(gauge("models.budgetBytes") == CacheBudget.LocalBytes, "auto, in local mode")
  }

  test("the batched operator reports the peak of native memory while its tasks scored") {
    val frame = fixtureFrame.repartition(2).select(score(binaryModel, ScoreOptions(kind = "contrib")).as("s"))
    frame.collect()
    val peak = batchOperators(frame).head.metrics("nativePeakBytes").value
    val contributionBuffer = 8192L * binaryModel.numFeatures * 8 // at least one task's feature matrix
    assert(peak >= contributionBuffer, s"peak $peak")
  }

  test("auto: the overhead left after the JVM's reserve and the task slots' memory, with a warning when short") {
    def budget(settings: (String, String)*): CacheBudget =
      CacheBudget.of(new SparkConf(false).setMaster("yarn").setAll(settings))
    val slot = (16L << 20) + CacheBudget.WorkingReserveBytes // batch.maxBytes and the working allowance
    val small = budget("spark.executor.memory" -> "6g", "spark.executor.cores" -> "4")
    assert(small.overheadBytes == (614L << 20), "10% of 6 GiB")
    assert(small.maxBytes == (614L << 20) - CacheBudget.JvmReserveBytes - 4 * slot)
    assert(small.shortfallBytes == 0 && small.warning.isEmpty)
    val tight = budget("spark.executor.memory" -> "4g", "spark.executor.cores" -> "4")
    assert(tight.warning.exists(_.contains("leaves 57 MiB for native models")), tight.warning)

    val roomy = budget("spark.executor.memoryOverhead" -> "3g", "spark.executor.cores" -> "4")
    assert(roomy.maxBytes == (3072L << 20) - CacheBudget.JvmReserveBytes - 4 * slot)
    assert(roomy.warning.isEmpty)

    val explicit = budget("spark.executor.memory" -> "8g", "spark.executor.cores" -> "2",
      TreescoreConf.CacheMaxBytes.key -> "2g")
    assert(explicit.maxBytes == (2L << 30))
    val short = (256L << 20) + 2 * slot + (2048L << 20) - (819L << 20)
    assert(explicit.shortfallBytes == short)
    assert(explicit.warning.exists(_.contains(s"Raise spark.executor.memoryOverhead by at least ${short >> 20} MiB")),
      explicit.warning)

    val minimum = budget("spark.executor.memory" -> "1g", "spark.executor.cores" -> "16")
    assert(minimum.overheadBytes == (384L << 20) && minimum.maxBytes == 0, "384 MiB cannot hold 16 slots' memory")
    assert(minimum.warning.exists(_.contains(s"by at least ${(256 + 16 * (slot >> 20) - 384)} MiB")), minimum.warning)

    val wideBatches = budget("spark.executor.memoryOverhead" -> "3g", "spark.executor.cores" -> "4",
      TreescoreConf.BatchMaxBytes.key -> "64m")
    assert(wideBatches.maxBytes == (3072L << 20) - CacheBudget.JvmReserveBytes - 4 * ((64L << 20) + CacheBudget.WorkingReserveBytes))

    // A task of two cores may run its native calls on two threads, each with its own working memory.
    val twoCoreTasks = budget("spark.executor.memoryOverhead" -> "3g", "spark.executor.cores" -> "4", "spark.task.cpus" -> "2")
    assert(twoCoreTasks.taskSlots == 2 && twoCoreTasks.threadsPerTask == 2)
    assert(twoCoreTasks.maxBytes == (3072L << 20) - CacheBudget.JvmReserveBytes - 2 * ((16L << 20) + 2 * CacheBudget.WorkingReserveBytes))
    assert(twoCoreTasks.describe.contains("2 task slots' buffers and working memory for 2 threads each"), twoCoreTasks.describe)

    assert(CacheBudget.of(new SparkConf(false).setMaster("local[4]")).maxBytes == CacheBudget.LocalBytes)

    // The driver cannot know the cores of executors whose cores are not set: it assumes one slot.
    val unknownCores = CacheBudget.largestOf(new SparkConf(false).setMaster("yarn").set("spark.executor.memory", "4g"))
    assert(unknownCores.maxBytes == (409L << 20) - CacheBudget.JvmReserveBytes - slot)
    val knownCores = new SparkConf(false).setMaster("yarn").set("spark.executor.memory", "4g").set("spark.executor.cores", "4")
    assert(CacheBudget.largestOf(knownCores) == CacheBudget.of(knownCores))
  }

  test("batch.maxBytes bounds a task's buffers: wide calls get fewer rows per batch, with the same bits") {
    val contributions = score(binaryModel, ScoreOptions(kind = "contrib")).as("c")
    def run(): (Seq[Seq[Long]], Long) = {
      val frame = fixtureFrame.coalesce(1).select(contributions)
      val rows = frame.collect().map(r => bits(r.getSeq[Double](0))).toSeq
      (rows, batchOperators(frame).head.metrics("numBatches").value)
    }
    val (unbounded, oneBatch) = run()
    val perRow = 8L * (binaryModel.numFeatures + (binaryModel.numFeatures + 1) * binaryModel.numClasses)
    spark.conf.set(TreescoreConf.BatchMaxBytes.key, (perRow * 100).toString)
    try {
      val (bounded, batches) = run()
      assert(bounded == unbounded)
      assert(oneBatch == 1 && batches == (fixtureRows.length + 99) / 100, s"$batches batches of 100 rows")
    } finally spark.conf.unset(TreescoreConf.BatchMaxBytes.key)
  }

  test("a top-K selection's working memory counts toward batch.maxBytes: its batches hold fewer rows") {
    def run(): (Seq[Long], Long) = {
      val frame = fixtureFrame.coalesce(1).select(score(regressionModel).as("s")).orderBy(desc("s")).limit(5)
      val rows = bits(frame.collect().map(_.getDouble(0)).toSeq)
      val operator = batchOperators(frame).head
      assert(operator.topK.nonEmpty, frame.queryExecution.executedPlan)
      (rows, operator.metrics("numBatches").value)
    }
    val (full, _) = run()
    val buffers = 8L * (regressionModel.numFeatures + 1)
    spark.conf.set(TreescoreConf.BatchMaxBytes.key, (buffers * 100).toString)
    try {
      val (bounded, batches) = run()
      assert(bounded == full)
      assert(batches > (fixtureRows.length + 99) / 100, s"$batches batches: more than buffers alone would make")
      val perRow = buffers + 8 * execution.TopKScorer.doublesPerRow(regressionModel.numFeatures, 1)
      assert(batches == (fixtureRows.length + buffers * 100 / perRow - 1) / (buffers * 100 / perRow))
    } finally spark.conf.unset(TreescoreConf.BatchMaxBytes.key)
  }
}
