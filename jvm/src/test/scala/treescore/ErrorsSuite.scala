package treescore

import java.io.FileNotFoundException

import org.apache.spark.sql.AnalysisException
import org.apache.spark.sql.functions.{col, lit}

import treescore.ensemble.{EnsembleScorer, Member, ModelScorer}
import treescore.functions.score
import treescore.model.{IterationRange, TreeModel}
import treescore.nativelib.ModelCache

/** Bad input fails on the driver with a message that names what is wrong. */
class ErrorsSuite extends SparkSuite {

  test("the wrong number of feature columns is an AnalysisException naming both counts") {
    val e = intercept[AnalysisException] {
      fixtureFrame.select(score(regressionModel, col("f0"), col("f1")))
    }
    assert(e.getMessage.contains("the model expects 6 feature columns (f0, f1, f2, f3, f4, f5) but 2 were given"),
      e.getMessage)
  }

  test("a non-numeric column is an AnalysisException naming the column, feature and type") {
    val features = col("f0") +: lit("text").as("label") +: featureNames.drop(2).map(col)
    val e = intercept[AnalysisException] {
      fixtureFrame.select(score(regressionModel, features: _*))
    }
    assert(e.getMessage.contains("given for feature 'f1' has type string; expected a numeric or boolean column"),
      e.getMessage)
  }

  test("a feature name the data lacks is an AnalysisException naming it") {
    val e = intercept[AnalysisException] {
      fixtureFrame.drop("f3").select(score(regressionModel))
    }
    assert(e.getMessage.contains("`f3`"), e.getMessage)
  }

  test("a model the executors' cache cannot hold is an AnalysisException naming both sizes, before any task") {
    ModelCache.clear()
    ModelCache.setMaxBytesForTesting(100L << 10)
    try {
      val e = intercept[AnalysisException](fixtureFrame.select(score(regressionModel)))
      val needs = ModelCache.loadReserve(regressionModel, IterationRange.All)
      assert(e.getMessage.contains(s"needs ${needs >> 10} KiB of native memory, more than the model cache's budget of " +
        "100 KiB (spark.treescore.cache.maxBytes=100 KiB)"), e.getMessage)
      assert(e.getMessage.contains("spark.executor.memoryOverhead"), e.getMessage)
      assert(ModelCache.loadedCount == 0, "the driver loaded nothing to find out")
    } finally ModelCache.setMaxBytesForTesting(None)
  }

  test("an ensemble member the cache cannot hold fails at analysis; what fits runs") {
    ModelCache.clear()
    val Seq(regression, binary) = Seq(regressionModel, binaryModel).map(ModelCache.loadReserve(_, IterationRange.All))
    assert(binary > regression, "the fixtures' sizes changed: pick the budget anew")
    ModelCache.setMaxBytesForTesting(regression)
    try {
      val both = EnsembleScorer(Seq(Member(ModelScorer(regressionModel)), Member(ModelScorer(binaryModel))))
      val member = intercept[AnalysisException](fixtureFrame.select(score(both)))
      assert(member.getMessage.contains(s"model ${binaryModel.contentHash.take(12)} (all iterations, "), member.getMessage)
      assert(member.getMessage.contains(s"needs ${binary >> 10} KiB of native memory"), member.getMessage)
      assert(fixtureFrame.select(score(regressionModel)).collect().length == fixtureFrame.count())
      // Contributions too: the load leaves no room for TreeSHAP tables, so every leaf replays.
      val contributions = fixtureFrame.select(score(regressionModel, ScoreOptions(kind = "contrib")))
      def contributionBits(): Seq[Seq[Long]] = contributions.collect().toSeq.map(r => bits(r.getSeq[Double](0)))
      val replayed = contributionBits()
      ModelCache.setMaxBytesForTesting(None)
      ModelCache.clear()
      assert(replayed == contributionBits(), "the same bits as with tables")
    } finally ModelCache.setMaxBytesForTesting(None)
  }

  test("a missing model file names the path") {
    val missing = tempDir.resolve("no-such-model.txt").toString
    val e = intercept[FileNotFoundException] {
      TreeModel.load(missing, spark.sessionState.newHadoopConf())
    }
    assert(e.getMessage == s"treescore: no model file at '$missing'")
  }
}

/** Errors about vector and array inputs, at analysis and while running. */
class InputShapeErrorsSuite extends SparkSuite {
  import org.apache.spark.SparkException
  import org.apache.spark.sql.functions.{array, lit, when}

  test("an array whose declared size is wrong is an AnalysisException naming both sizes") {
    val e = intercept[AnalysisException] {
      fixtureFrame.select(score(regressionModel, array(col("f0"), col("f1"))))
    }
    assert(e.getMessage.contains("holds 2 features but the model expects 6 (f0, f1, f2, f3, f4, f5)"), e.getMessage)
  }

  test("an array of strings is an AnalysisException naming its type") {
    val e = intercept[AnalysisException] {
      fixtureFrame.select(score(regressionModel, array(lit("a"), lit("b"))))
    }
    assert(e.getMessage.contains("has type array<string>; expected array<float> or array<double>"), e.getMessage)
  }

  test("a row whose array has the wrong length is a SparkException naming both lengths, and the JVM lives on") {
    val full = array(featureNames.map(col): _*)
    val ragged = when(col("f1") > 2.5, array(col("f0"))).otherwise(full)
    val e = intercept[SparkException] {
      fixtureFrame.select(score(regressionModel, ragged)).collect()
    }
    assert(e.getMessage.contains("treescore: a row's feature array has 1 values but the model expects 6"), e.getMessage)
    assert(fixtureFrame.select(score(regressionModel)).count() == fixtureRows.length)
  }
}
