package treescore

import org.apache.spark.SparkConf
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.functions.{col, udf}
import org.apache.spark.sql.execution.treescore.TaskMemory

import treescore.functions.score
import treescore.nativelib.CacheBudget

/**
 * Where Spark manages off-heap execution memory, treescore's task buffers are granted by each
 * task's memory manager: Spark counts them, and a task it cannot grant them to fails cleanly.
 */
class OffHeapBuffersSuite extends SparkSuite {

  override lazy val spark: SparkSession = SparkSession.builder()
    .master("local[2]")
    .appName(getClass.getSimpleName)
    .config("spark.sql.extensions", classOf[TreescoreExtensions].getName)
    .config("spark.memory.offHeap.enabled", "true")
    .config("spark.memory.offHeap.size", "64m")
    .config("spark.ui.enabled", "false")
    .config("spark.driver.host", "127.0.0.1")
    .config("spark.driver.bindAddress", "127.0.0.1")
    .getOrCreate()

  private val heldByTask = udf((_: Double) => TaskMemory.heldByThisTask)

  test("a task's buffers are execution memory Spark counts while the task holds them") {
    val contributions = score(binaryModel, ScoreOptions(kind = "contrib"))
    val frame = fixtureFrame.coalesce(1).select(contributions.as("c"), score(binaryModel).as("s"))
    val held = frame.select(heldByTask(col("s")).as("held")).collect().map(_.getLong(0))
    val rows = math.min(8192L, fixtureRows.length)
    val outputs = rows * 8 * ((binaryModel.numFeatures + 1) * binaryModel.numClasses + binaryModel.numClasses)
    val features = rows * 8 * binaryModel.numFeatures
    assert(held.forall(_ >= outputs + features), s"held ${held.distinct.mkString(", ")}, buffers ${outputs + features}")
    val scored = frame.collect()
    assert(scored.length == fixtureRows.length)
  }

  test("a task Spark cannot grant its buffers fails, naming the settings") {
    spark.conf.set(TreescoreConf.BatchMaxBytes.key, "256m")
    spark.conf.set(TreescoreConf.BatchRows.key, "4000000")
    try {
      val wide = fixtureFrame.coalesce(1).select(score(binaryModel, ScoreOptions(kind = "contrib")).as("c"))
      val e = intercept[Exception](wide.collect())
      assert(e.getMessage.contains("Spark's off-heap execution memory granted"), e.getMessage)
      assert(e.getMessage.contains("raise spark.memory.offHeap.size, or lower spark.treescore.batch.maxBytes"), e.getMessage)
    } finally {
      spark.conf.unset(TreescoreConf.BatchMaxBytes.key)
      spark.conf.unset(TreescoreConf.BatchRows.key)
    }
  }

  test("with off-heap execution memory, the model budget reserves overhead for task working memory only") {
    val conf = new SparkConf(false).setMaster("yarn").setAll(Seq("spark.executor.memoryOverhead" -> "1g",
      "spark.executor.cores" -> "4", "spark.memory.offHeap.enabled" -> "true", "spark.memory.offHeap.size" -> "2g"))
    val budget = CacheBudget.of(conf)
    assert(budget.maxBytes == (1024L << 20) - CacheBudget.JvmReserveBytes - 4 * CacheBudget.WorkingReserveBytes)
    assert(budget.describe.contains("Spark's off-heap execution memory holds their buffers"), budget.describe)
  }
}
