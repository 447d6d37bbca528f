package treescore

import java.nio.charset.StandardCharsets
import java.nio.file.Files

import org.apache.spark.sql.{AnalysisException, DataFrame, Row}
import org.apache.spark.sql.functions.{call_function, col, lit}

import treescore.ensemble.{EnsembleScorer, Member, ModelScorer, SpecIO}
import treescore.functions.{score, scoreGrid}
import treescore.sql.ModelRegistry

/** treescore's SQL functions: named models, grids, models by path or bytes, and their errors. */
class SqlSuite extends SparkSuite {

  private val features = "f0, f1, f2, f3, f4, f5"

  override def beforeAll(): Unit = {
    super.beforeAll()
    fixtureFrame.createOrReplaceTempView("rows")
    ModelRegistry.register(spark, "reg", regressionModel)
    ModelRegistry.register(spark, "bin", binaryModel)
  }

  private def doubles(df: DataFrame): Seq[Double] = df.collect().toSeq.map(_.getDouble(0))

  private def analysisError(query: => DataFrame): String = intercept[AnalysisException](query.collect()).getMessage

  test("a registered model scores from SQL exactly as functions.score and lightgbm do, batched") {
    val sql = spark.sql(s"SELECT treescore_score('reg', $features) AS p, regression FROM rows")
    val api = fixtureFrame.select(score(regressionModel, featureNames.map(col): _*))
    assert(batchOperators(sql).length == 1)
    val rows = sql.collect()
    assert(bits(rows.map(_.getDouble(0)).toSeq) == bits(doubles(api)))
    assert(bits(rows.map(_.getDouble(0)).toSeq) == bits(rows.map(_.getDouble(1)).toSeq))
  }

  test("with no features the columns named like the model's features are read; options choose the kind") {
    assert(bits(doubles(spark.sql("SELECT treescore_score('bin') FROM rows"))) ==
      bits(doubles(fixtureFrame.select(col("binary")))))
    val contrib = spark.sql(s"SELECT treescore_score('reg', map('kind', 'contrib', 'num_iterations', '5'), $features) FROM rows")
    val api = fixtureFrame.select(score(regressionModel, ScoreOptions(kind = "contrib", numIterations = 5), featureNames.map(col): _*))
    assert(contrib.collect().toSeq.map(_.getSeq[Double](0)) == api.collect().toSeq.map(_.getSeq[Double](0)))
  }

  test("the grid form equals functions.scoreGrid") {
    val sql = spark.sql("SELECT treescore_score_grid('reg', 'f2', array(0, 0.25, 1e-1), " +
      "map('f3', 'f3 * (1 - f2)'), 'decreasing') FROM rows")
    val api = fixtureFrame.select(scoreGrid(regressionModel, "f2", Seq(0.0, 0.25, 0.1), Map("f3" -> "f3 * (1 - f2)"), "decreasing"))
    assert(batchOperators(sql).length == 1)
    assert(sql.collect().toSeq.map(_.getSeq[Double](0)) == api.collect().toSeq.map(_.getSeq[Double](0)))
  }

  test("a path set in the session conf registers a model file or a saved scorer folder") {
    val modelFile = tempDir.resolve("conf-reg.txt")
    Files.writeString(modelFile, regressionModel.text)
    val ensemble = EnsembleScorer(Seq(Member(ModelScorer(regressionModel), 0.7), Member(ModelScorer(binaryModel), 0.3)))
    val folder = tempDir.resolve("conf-ensemble").toString
    SpecIO.save(ensemble, folder)
    spark.sql(s"SET spark.treescore.model.from_file = $modelFile")
    spark.sql(s"SET spark.treescore.model.from_folder = $folder")
    try {
      assert(bits(doubles(spark.sql(s"SELECT treescore_score('from_file', $features) FROM rows"))) ==
        bits(doubles(fixtureFrame.select(col("regression")))))
      assert(bits(doubles(spark.sql("SELECT treescore_score('from_folder') FROM rows"))) ==
        bits(doubles(fixtureFrame.select(score(ensemble)))))
      assert(spark.sql("SELECT treescore_describe('from_folder')").head().getString(0) == ensemble.describe)
    } finally {
      spark.conf.unset("spark.treescore.model.from_file")
      spark.conf.unset("spark.treescore.model.from_folder")
    }
  }

  test("an unknown name fails analysis naming it and the registered names") {
    val message = analysisError(spark.sql("SELECT treescore_score('demand_v9', f0) FROM rows"))
    assert(message.contains("no model is registered as 'demand_v9'") && message.contains("registered: bin, reg"), message)
    val grid = analysisError(spark.sql("SELECT treescore_score_grid('nope', 'f0', array(1.0)) FROM rows"))
    assert(grid.contains("'nope'"), grid)
  }

  test("registering a missing file names it; a conf path to a missing file fails when used, naming both") {
    val missing = tempDir.resolve("no-such-model.txt").toString
    val e = intercept[java.io.FileNotFoundException](ModelRegistry.registerPath(spark, "gone", missing))
    assert(e.getMessage.contains(missing), e.getMessage)
    spark.conf.set("spark.treescore.model.gone", missing)
    try {
      val message = analysisError(spark.sql("SELECT treescore_score('gone') FROM rows"))
      assert(message.contains("spark.treescore.model.gone") && message.contains(missing), message)
    } finally spark.conf.unset("spark.treescore.model.gone")
    assert(intercept[IllegalArgumentException](ModelRegistry.register(spark, " ", regressionModel)).getMessage.contains("name"))
  }

  test("names are per session") {
    val other = spark.newSession()
    assert(!ModelRegistry.names(other).contains("reg"))
    ModelRegistry.register(other, "only_there", binaryModel)
    assert(!ModelRegistry.names(spark).contains("only_there"))
    assert(ModelRegistry.unregister(other, "only_there"))
  }

  test("models by path or by text bytes, and specs with their model texts, as Spark Connect clients send them") {
    val modelFile = tempDir.resolve("by-path.txt")
    Files.writeString(modelFile, binaryModel.text)
    val bytes = regressionModel.text.getBytes(StandardCharsets.UTF_8)
    val byPath = fixtureFrame.select(call_function("treescore_score_model", lit(modelFile.toString)))
    val byBytes = fixtureFrame.select(call_function("treescore_score_model", lit(bytes) +: featureNames.map(col): _*))
    assert(batchOperators(byBytes).length == 1)
    assert(bits(doubles(byPath)) == bits(doubles(fixtureFrame.select(col("binary")))))
    assert(bits(doubles(byBytes)) == bits(doubles(fixtureFrame.select(col("regression")))))

    val ensemble = EnsembleScorer(Seq(Member(ModelScorer(regressionModel), 2.0), Member(ModelScorer(binaryModel), -1.0)))
    val spec = SpecIO.specJson(ensemble, inMemory = true)
    val bySpec = fixtureFrame.select(call_function("treescore_score_spec", lit(spec), lit(bytes),
      lit(binaryModel.text.getBytes(StandardCharsets.UTF_8))))
    assert(bits(doubles(bySpec)) == bits(doubles(fixtureFrame.select(score(ensemble)))))

    val notLiteral = analysisError(fixtureFrame.select(call_function("treescore_score_model", col("f0"))))
    assert(notLiteral.contains("treescore_score_model") && notLiteral.contains("must be a literal"), notLiteral)
    val missing = analysisError(fixtureFrame.select(call_function("treescore_score_model", lit("/no/such/model.txt"))))
    assert(missing.contains("/no/such/model.txt"), missing)
  }

  test("a bad feature count, or features or a kind other than contrib for an ensemble, is an analysis error") {
    val few = analysisError(spark.sql("SELECT treescore_score('reg', f0, f1) FROM rows"))
    assert(few.contains("treescore"), few)
    ModelRegistry.register(spark, "ens", EnsembleScorer(Seq(Member(ModelScorer(regressionModel)))))
    val withColumns = analysisError(spark.sql("SELECT treescore_score('ens', f0) FROM rows"))
    assert(withColumns.contains("pass no feature columns"), withColumns)
    val leaves = analysisError(spark.sql("SELECT treescore_score('ens', map('kind', 'leaf')) FROM rows"))
    assert(leaves.contains("scores kind prediction or contrib, not leaf"), leaves)
    val kind = analysisError(spark.sql("SELECT treescore_score('reg', map('kind', 'shap')) FROM rows"))
    assert(kind.contains("unknown score kind 'shap'"), kind)
  }
}
