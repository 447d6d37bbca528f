package treescore

import scala.collection.mutable

import org.apache.logging.log4j.LogManager
import org.apache.logging.log4j.core.{LogEvent, Logger => CoreLogger}
import org.apache.logging.log4j.core.appender.AbstractAppender
import org.apache.logging.log4j.core.config.Property
import org.apache.spark.TaskContext

import treescore.execution.CallThreads
import treescore.functions.score

/** spark.treescore.native.threads runs at most the cores a task holds, and says so where it asks for more. */
class CallThreadsSuite extends SparkSuite {

  /** The driver's log messages at WARN or above while `body` runs. */
  private def warnings(body: => Unit): Seq[String] = {
    val seen = mutable.ArrayBuffer.empty[String]
    val appender = new AbstractAppender("treescore-test-warnings", null, null, true, Property.EMPTY_ARRAY) {
      override def append(event: LogEvent): Unit = seen.synchronized(seen += event.getMessage.getFormattedMessage)
    }
    appender.start()
    val root = LogManager.getRootLogger.asInstanceOf[CoreLogger]
    root.addAppender(appender)
    try body finally { root.removeAppender(appender); appender.stop() }
    seen.synchronized(seen.toList)
  }

  test("a task's calls run on at most its cores: native.threads above spark.task.cpus is capped") {
    val inTask = spark.sparkContext.parallelize(Seq(1, 2, 4), 3).map(n => CallThreads.forTask(n, TaskContext.get().cpus()))
    assert(inTask.collect().toSeq == Seq(1, 1, 1), "this session's tasks hold one core each (spark.task.cpus=1)")
    assert(CallThreads.forTask(4, 2) == 2 && CallThreads.forTask(2, 4) == 2 && CallThreads.forTask(1, 1) == 1)
  }

  test("planning a score with native.threads above spark.task.cpus warns once per plan, naming both settings") {
    val expected = bits(fixtureFrame.select(score(regressionModel).as("p")).collect().map(_.getDouble(0)).toSeq)
    spark.conf.set(TreescoreConf.NativeThreads.key, "4")
    try {
      var scored = Seq.empty[Long]
      val logged = warnings {
        scored = bits(fixtureFrame.select(score(regressionModel).as("p")).collect().map(_.getDouble(0)).toSeq)
      }.filter(_.contains(TreescoreConf.NativeThreads.key))
      assert(logged == Seq(CallThreads.warning(4, 1).get), logged)
      assert(logged.head.contains("spark.task.cpus=1") && logged.head.contains("spark.task.cpus=4"))
      assert(scored == expected)
    } finally spark.conf.unset(TreescoreConf.NativeThreads.key)
    assert(warnings(fixtureFrame.select(score(regressionModel).as("p")).collect()).forall(!_.contains("native.threads")),
      "the default of one thread warns")
  }
}
