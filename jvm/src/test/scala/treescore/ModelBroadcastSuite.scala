package treescore

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, ObjectInputStream, ObjectOutputStream}

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.functions.col

import treescore.functions.score
import treescore.model.TreeModel

/** Models over spark.treescore.broadcast.thresholdBytes leave the plan and travel as broadcasts. */
class ModelBroadcastSuite extends SparkSuite {

  private def serialized(value: AnyRef): Array[Byte] = {
    val bytes = new ByteArrayOutputStream()
    val out = new ObjectOutputStream(bytes)
    out.writeObject(value)
    out.close()
    bytes.toByteArray
  }

  private def deserialized[T](bytes: Array[Byte]): T =
    new ObjectInputStream(new ByteArrayInputStream(bytes)).readObject().asInstanceOf[T]

  /** Whether `model` scores the fixture rows read by `session` exactly as lightgbm did. */
  private def agrees(model: TreeModel, session: SparkSession = spark): Boolean = {
    fixtureFrame // writes the Parquet fixture
    val rows = session.read.parquet(tempDir.resolve("rows.parquet").toString)
      .select(col("regression"), score(model)).collect()
    rows.length == fixtureRows.length && bits(rows.map(_.getDouble(1)).toSeq) == bits(rows.map(_.getDouble(0)).toSeq)
  }

  private def withThreshold[T](value: String)(body: => T): T = {
    spark.conf.set(TreescoreConf.BroadcastThresholdBytes.key, value)
    try body finally spark.conf.unset(TreescoreConf.BroadcastThresholdBytes.key)
  }

  test("a model over the threshold is broadcast: the plan no longer carries its text, and scores do not change") {
    val model = TreeModel.fromString(regressionModel.text)
    val textBytes = model.text.length
    assert(textBytes > 10000)
    assert(serialized(model).length > textBytes, "inline, the text travels in the plan")
    withThreshold("10k") {
      assert(agrees(model))
      assert(model.isBroadcast)
      val df = fixtureFrame.select(score(model))
      // The calls keep their columns and the model's feature names, not its text.
      val plan = serialized(batchOperators(df).head.scores)
      assert(plan.length < textBytes / 5, s"the score calls serialize to ${plan.length} bytes")
      // The row-at-a-time fallback reads the same broadcast.
      assert(withBatchingDisabled(agrees(model)))
    }
    val shipped = serialized(model)
    // Its header travels (feature names, the sizes of its TreeSHAP tables), not its text.
    assert(shipped.length < 3000, s"a shipped model serializes to ${shipped.length} bytes")
    val received = deserialized[TreeModel](shipped)
    assert(received == model && received.text == model.text && received.featureNames == model.featureNames)
  }

  test("a model under the threshold stays in the plan") {
    val model = TreeModel.fromString(regressionModel.text)
    assert(agrees(model))
    assert(!model.isBroadcast)
    withThreshold(model.text.length.toString) {
      fixtureFrame.select(score(model)).collect()
      assert(!model.isBroadcast, "the threshold is exclusive: a model of exactly that size stays inline")
    }
  }

  test("ensemble members are broadcast too") {
    val a = TreeModel.fromString(regressionModel.text)
    val b = TreeModel.fromString(binaryModel.text)
    val pair = ensemble.EnsembleScorer(Seq(ensemble.Member(ensemble.ModelScorer(a)), ensemble.Member(ensemble.ModelScorer(b))))
    withThreshold("0")(fixtureFrame.select(score(pair)).collect())
    assert(a.isBroadcast && b.isBroadcast)
  }

  test("a bad threshold names the setting") {
    withThreshold("lots") {
      val e = intercept[IllegalArgumentException](fixtureFrame.select(score(TreeModel.fromString(regressionModel.text))).collect())
      assert(e.getMessage == s"${TreescoreConf.BroadcastThresholdBytes.key} must be a size such as 100m or 1048576, got 'lots'")
    }
  }

  test("a model shipped through a stopped SparkContext travels inline, then ships through the next one") {
    val model = TreeModel.fromString(regressionModel.text)
    withThreshold("0")(fixtureFrame.select(score(model)).collect())
    assert(model.isBroadcast)
    spark.stop()
    assert(!model.isBroadcast)
    assert(deserialized[TreeModel](serialized(model)).text == model.text)
    val session = SparkSession.builder().master("local[2]").appName("next")
      .config("spark.sql.extensions", classOf[TreescoreExtensions].getName)
      .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
      .config("spark.driver.bindAddress", "127.0.0.1").config(TreescoreConf.BroadcastThresholdBytes.key, "0")
      .getOrCreate()
    try {
      assert(agrees(model, session))
      assert(model.isBroadcast)
    } finally session.stop()
  }
}
