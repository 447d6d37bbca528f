package treescore

import java.util.concurrent.{Callable, ConcurrentHashMap, Executors, TimeUnit}

import scala.jdk.CollectionConverters._

import org.apache.spark.TaskContext
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.functions.{col, udf}

import treescore.functions.score
import treescore.model.{Engine, PredictKind}
import treescore.nativelib.ModelCache

/**
 * Tasks whose batched operators are stacked (a score over another score's result, so the upper
 * operator reads the rows the lower one scores) lease every operator's models together.
 */
class TaskLeasesSuite extends SparkSuite {

  import TaskLeasesSuite.pausedTasks

  // Each task waits once, at its first row between the two operators, so that every task of the
  // round has begun its lower operator before any begins its upper one.
  private val pauseOnce = udf { (s: Double) =>
    if (pausedTasks.add(TaskContext.get().taskAttemptId())) Thread.sleep(500)
    s
  }

  private def options(start: Int) = ScoreOptions(startIteration = start, numIterations = 4)

  /** Query `q`: the regression model's iterations from 4q (one cache entry), then from 4q + 2 over that score. */
  private def stacked(q: Int, sortBetween: Boolean): DataFrame = {
    val lower = fixtureFrame.coalesce(1).select(col("f0"), col("f1"), col("f2"), col("f3"), col("f4"),
      pauseOnce(score(regressionModel, options(4 * q), featureNames.map(col): _*)).as("s"))
    val between = if (sortBetween) lower.sortWithinPartitions("s") else lower
    // "s" read twice keeps the pause in a projection of its own beneath the upper operator, which
    // evaluates its first batch's rows there before it begins (inlined into the upper call's
    // features, the pause would come after the upper operator began).
    between.select(col("s"),
      score(regressionModel, options(4 * q + 2), Seq("s", "f1", "f2", "f3", "f4", "f0").map(col): _*).as("t"))
  }

  /**
   * Query `q` row at a time: the two calls of [[stacked]] side by side, the pause between them
   * (a call opens its scorer before its features are evaluated, so a pause in the second call's
   * features would come after both had opened).
   */
  private def sideBySide(q: Int): DataFrame = {
    val first = score(regressionModel, options(4 * q), featureNames.map(col): _*)
    fixtureFrame.coalesce(1).select(first.as("s"), pauseOnce(first).as("paused"),
      score(regressionModel, options(4 * q + 2), featureNames.map(col): _*).as("t"))
  }

  /** Every value of every row, as bits, in an order that does not depend on the rows'. */
  private def scored(df: DataFrame): Seq[Long] =
    bits(df.collect().toSeq.flatMap(row => (0 until row.length).map(row.getDouble))).sorted

  /**
   * Runs each of `queries` (query q with the models [[stacked]] gives it) alone, then in two rounds at once
   * under a budget with room for one task's two models, not for two tasks each holding its lower
   * one and asking for its upper one; both must give their bits every time.
   */
  private def contending(queries: Seq[DataFrame]): Unit = {
    spark.conf.set(TreescoreConf.EngineChoice.key, "treescore")
    spark.conf.set(TreescoreConf.BatchRows.key, "64")
    val pool = Executors.newFixedThreadPool(2)
    try {
      ModelCache.setMaxBytesForTesting(None)
      ModelCache.clear()
      val expected = queries.map(scored)
      val requests = for (q <- queries.indices; start <- Seq(4 * q, 4 * q + 2))
        yield ModelCache.Request(regressionModel, options(start).iterations, Engine.Treescore, PredictKind.Prediction)
      val held = requests.map { r =>
        val lease = ModelCache.acquire(r.model, r.range, r.engine, r.kind)
        try lease.model.heldBytes finally lease.close()
      }
      val budget = held.max + requests.map(r => ModelCache.loadReserve(r.model, r.range)).max
      for (round <- 1 to 2) {
        ModelCache.clear()
        pausedTasks.clear()
        ModelCache.setMaxBytesForTesting(Some(budget))
        val runs = queries.map(q => new Callable[Seq[Long]] { def call(): Seq[Long] = scored(q) })
        val outcomes = pool.invokeAll(runs.asJava, 120, TimeUnit.SECONDS).asScala.map(_.get())
        assert(outcomes == expected, s"round $round: both queries give their bits")
        assert(ModelCache.leasesHeld == 0 && ModelCache.loadedBytes <= budget)
      }
    } finally {
      pool.shutdown()
      ModelCache.setMaxBytesForTesting(None)
      spark.conf.unset(TreescoreConf.EngineChoice.key)
      spark.conf.unset(TreescoreConf.BatchRows.key)
    }
  }

  test("stacked operators in tasks that contend for the budget wait for room, never fail, and score exactly") {
    for (sortBetween <- Seq(false, true)) {
      val queries = Seq(0, 1).map(stacked(_, sortBetween))
      assert(queries.forall(q => batchOperators(q).length == 2), "each query stacks two batched operators")
      contending(queries)
    }
  }

  test("an operator returns its models after its last row, before a later operator of its task begins") {
    import TaskLeasesSuite.leasesSeen
    val watch = udf { (s: Double) =>
      leasesSeen.putIfAbsent(TaskContext.get().taskAttemptId(), Integer.valueOf(ModelCache.leasesHeld))
      s
    }
    ModelCache.setMaxBytesForTesting(None)
    for (sortBetween <- Seq(false, true)) {
      leasesSeen.clear()
      val lower = fixtureFrame.coalesce(1).select(col("f1"), col("f2"), col("f3"), col("f4"), col("f5"),
        score(regressionModel, options(0), featureNames.map(col): _*).as("s"))
      // A sort reads all of the lower operator's rows before the watch sees its first.
      val between = if (sortBetween) lower.sortWithinPartitions("s") else lower
      // Read twice, the watch stays in a projection of its own beneath the upper operator, which
      // evaluates its batch's rows there before it begins.
      val watched = between.select((watch(col("s")).as("w") +: Seq("f1", "f2", "f3", "f4", "f5").map(col)): _*)
      val query = watched.select(col("w"), score(regressionModel, options(2),
        Seq("w", "f1", "f2", "f3", "f4", "f5").map(col): _*).as("t"))
      assert(batchOperators(query).length == 2)
      query.collect()
      val seen = leasesSeen.values().asScala.toSeq.map(_.intValue)
      assert(seen.length == 1, s"one task: $seen")
      if (sortBetween) assert(seen.head == 0, "the lower operator returned its models once its rows were read")
      else assert(seen.head > 0, "the lower operator holds its models while its rows stream up")
      assert(ModelCache.leasesHeld == 0)
    }
  }

  test("row-at-a-time calls in tasks that contend for the budget wait for room, never fail, and score exactly") {
    withBatchingDisabled {
      val queries = Seq(0, 1).map(sideBySide)
      assert(queries.forall(q => batchOperators(q).isEmpty), "every call is scored row at a time")
      contending(queries)
    }
  }
}

object TaskLeasesSuite {
  // The tasks that have paused; an object's field, so that the UDF ships without the suite.
  private val pausedTasks = ConcurrentHashMap.newKeySet[Long]()
  // The leases held in this JVM as each task's first row passed the watching UDF.
  private val leasesSeen = new ConcurrentHashMap[Long, Integer]()
}
