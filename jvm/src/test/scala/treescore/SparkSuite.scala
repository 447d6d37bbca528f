package treescore

import java.nio.file.{Files, Path}

import scala.io.Source

import org.apache.spark.sql.{DataFrame, Row, SparkSession}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.apache.spark.sql.types.{DoubleType, StructField, StructType}
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

import treescore.execution.{BatchScoreNode, TaskScorers}
import treescore.model.TreeModel

/** A local Spark session with treescore's extensions, and the shared test fixtures. */
trait SparkSuite extends AnyFunSuite with BeforeAndAfterAll with AdaptiveSparkPlanHelper {

  lazy val spark: SparkSession = SparkSession.builder()
    .master("local[2]")
    .appName(getClass.getSimpleName)
    .config("spark.sql.extensions", classOf[TreescoreExtensions].getName)
    .config("spark.ui.enabled", "false")
    .config("spark.driver.host", "127.0.0.1")
    .config("spark.driver.bindAddress", "127.0.0.1")
    .config("spark.sql.shuffle.partitions", "4")
    .getOrCreate()

  lazy val tempDir: Path = Files.createTempDirectory("treescore-test-")

  override def afterAll(): Unit = {
    try spark.stop()
    finally org.apache.commons.io.FileUtils.deleteDirectory(tempDir.toFile)
    super.afterAll()
  }

  def resourceText(name: String): String = {
    val source = Source.fromResource(name)
    try source.mkString finally source.close()
  }

  lazy val regressionModel: TreeModel = TreeModel.fromString(resourceText("fixtures/regression.txt"))
  lazy val binaryModel: TreeModel = TreeModel.fromString(resourceText("fixtures/binary.txt"))

  /** The fixture rows: six features (nulls included) and lightgbm's own predictions for them. */
  lazy val fixtureRows: Seq[Row] = resourceText("fixtures/rows.csv").linesIterator.drop(1).map { line =>
    Row.fromSeq(line.split(",", -1).toSeq.map {
      case "" => null
      case "inf" => Double.PositiveInfinity
      case "-inf" => Double.NegativeInfinity
      case "nan" => Double.NaN
      case v => v.toDouble
    })
  }.toSeq

  val featureNames: Seq[String] = Seq("f0", "f1", "f2", "f3", "f4", "f5")

  /** The fixture rows as Parquet, read back: a real scan, as jobs have, not a local relation. */
  lazy val fixtureFrame: DataFrame = {
    val schema = StructType((featureNames ++ Seq("regression", "binary")).map(StructField(_, DoubleType)))
    val path = tempDir.resolve("rows.parquet").toString
    spark.createDataFrame(spark.sparkContext.parallelize(fixtureRows, 3), schema).write.parquet(path)
    spark.read.parquet(path)
  }

  def batchOperators(df: DataFrame): Seq[BatchScoreNode] = {
    val plan: SparkPlan = df.queryExecution.executedPlan
    collect(plan) { case b: BatchScoreNode => b }
  }

  /** Runs `body` with the batching rule off, so score calls are evaluated row at a time. */
  def withBatchingDisabled[T](body: => T): T = {
    spark.conf.set(TreescoreConf.BatchEnabled.key, "false")
    try body finally spark.conf.unset(TreescoreConf.BatchEnabled.key)
  }

  /** Runs `body`; also returns how many row-at-a-time scorers it opened and how many it left open. */
  def countingRowScorers[T](body: => T): (T, Long, Long) = {
    val (openedBefore, openBefore) = (TaskScorers.rowScorersOpened.get(), TaskScorers.rowScorersOpen.get())
    val result = body
    (result, TaskScorers.rowScorersOpened.get() - openedBefore, TaskScorers.rowScorersOpen.get() - openBefore)
  }

  /** Doubles compared bit for bit (so NaN equals NaN and 0.0 differs from -0.0). */
  def bits(values: Seq[Double]): Seq[Long] = values.map(java.lang.Double.doubleToRawLongBits)
}
