package treescore

import java.io.FileNotFoundException
import java.net.URI
import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Path => JPath}

import org.apache.hadoop.fs.RawLocalFileSystem
import org.apache.spark.sql.functions.col

import treescore.model.TreeModel

/** A Hadoop file system under its own scheme, as hdfs:// or s3a:// are: local files behind `treescoretest:`. */
class SchemeTestFileSystem extends RawLocalFileSystem {
  override def getUri: URI = URI.create("treescoretest:///")
  override def getScheme: String = "treescoretest"
}

/** TreeModel.load reads from any Hadoop file system and from MLflow LightGBM model directories. */
class ModelSourcesSuite extends SparkSuite {

  private def hadoopConf = {
    val conf = spark.sessionState.newHadoopConf()
    conf.set("fs.treescoretest.impl", classOf[SchemeTestFileSystem].getName)
    conf
  }

  private def write(path: JPath, text: String): JPath = {
    Files.createDirectories(path.getParent)
    Files.write(path, text.getBytes(StandardCharsets.UTF_8))
  }

  private lazy val modelFile = write(tempDir.resolve("plain/regression.txt"), regressionModel.text)

  /**
   * A directory laid out as mlflow.lightgbm.save_model writes one for a lightgbm.Booster (MLflow
   * 2.16.2's MLmodel, with the serialization keys MLflow 3 adds): the model text as model.lgb.
   */
  private def mlflowDir(name: String, lightgbmFlavor: String, files: Map[String, String]): JPath = {
    val dir = tempDir.resolve(name)
    write(dir.resolve("MLmodel"),
      s"""artifact_path: model
         |flavors:
         |$lightgbmFlavor  python_function:
         |    data: model.lgb
         |    env:
         |      conda: conda.yaml
         |      virtualenv: python_env.yaml
         |    loader_module: mlflow.lightgbm
         |    python_version: 3.11.9
         |mlflow_version: 2.16.2
         |model_size_bytes: 16722
         |model_uuid: 019fe4c303744ca0ace54ecd6fa109ef
         |run_id: 7dd549762cf5452d9f322375bc2a4f58
         |signature:
         |  inputs: '[{"type": "double", "name": "f0", "required": true}]'
         |  outputs: '[{"type": "tensor", "tensor-spec": {"dtype": "float64", "shape": [-1]}}]'
         |utc_time_created: '2024-10-01 12:00:00.000000'
         |""".stripMargin)
    write(dir.resolve("conda.yaml"), "channels:\n- conda-forge\ndependencies:\n- python=3.11.9\n")
    write(dir.resolve("python_env.yaml"), "python: 3.11.9\n")
    write(dir.resolve("requirements.txt"), "mlflow==2.16.2\nlightgbm==4.7.0\n")
    files.foreach { case (file, text) => write(dir.resolve(file), text) }
    dir
  }

  private def lightgbmFlavor(data: String, modelClass: String): String =
    s"""  lightgbm:
       |    code: null
       |    data: $data
       |    lgb_version: 4.7.0
       |    model_class: $modelClass
       |    serialization_format: cloudpickle
       |    skops_trusted_types: null
       |""".stripMargin

  test("a file: URI and a path under a registered Hadoop scheme load the same model") {
    val viaFileUri = TreeModel.load(modelFile.toUri.toString, hadoopConf)
    val viaScheme = TreeModel.load(s"treescoretest://${modelFile.toAbsolutePath}", hadoopConf)
    assert(modelFile.toUri.toString.startsWith("file:"))
    assert(viaFileUri == regressionModel && viaScheme == regressionModel)
    assert(viaScheme.source == s"model file 'treescoretest://${modelFile.toAbsolutePath}'")
  }

  test("a relative path is resolved against the working directory, as Hadoop's local file system does") {
    val cwd = java.nio.file.Paths.get("").toAbsolutePath
    val relative = cwd.relativize(modelFile.toAbsolutePath).toString
    assert(!relative.startsWith("/"))
    assert(TreeModel.load(relative, hadoopConf) == regressionModel)
  }

  test("an MLflow LightGBM model directory loads its model.lgb, also through another scheme") {
    val dir = mlflowDir("mlflow-booster", lightgbmFlavor("model.lgb", "lightgbm.basic.Booster"),
      Map("model.lgb" -> regressionModel.text))
    val model = TreeModel.load(dir.toString, hadoopConf)
    assert(model == regressionModel)
    assert(model.source == s"model file '$dir/model.lgb' of the MLflow model '$dir'")
    assert(TreeModel.load(s"treescoretest://$dir", hadoopConf) == regressionModel)
    val rows = fixtureFrame.select(col("regression"), functions.score(model)).collect()
    assert(bits(rows.map(_.getDouble(1)).toSeq) == bits(rows.map(_.getDouble(0)).toSeq))
  }

  test("an MLmodel from before model_class existed is a Booster") {
    val flavor = "  lightgbm:\n    data: model.lgb\n    lgb_version: 2.3.0\n"
    val dir = mlflowDir("mlflow-old", flavor, Map("model.lgb" -> regressionModel.text))
    assert(TreeModel.load(dir.toString, hadoopConf) == regressionModel)
  }

  test("a pickled scikit-learn model is refused, saying why and what to do instead") {
    val dir = mlflowDir("mlflow-sklearn", lightgbmFlavor("model.pkl", "lightgbm.sklearn.LGBMClassifier"),
      Map("model.pkl" -> "\u0080\u0005not really a pickle"))
    val e = intercept[IllegalArgumentException](TreeModel.load(dir.toString, hadoopConf))
    assert(e.getMessage.contains(s"'$dir' holds a lightgbm.sklearn.LGBMClassifier saved by MLflow as 'model.pkl'"), e.getMessage)
    assert(e.getMessage.contains("unpickling runs arbitrary code"), e.getMessage)
    assert(e.getMessage.contains("mlflow.lightgbm.log_model(model.booster_, ...)"), e.getMessage)
  }

  test("a directory without MLmodel names the directory and what was expected") {
    val dir = Files.createDirectories(tempDir.resolve("just-a-folder"))
    val e = intercept[FileNotFoundException](TreeModel.load(dir.toString, hadoopConf))
    assert(e.getMessage == s"treescore: '$dir' is a directory without an MLmodel file; " +
      "expected a LightGBM text model file or an MLflow LightGBM model directory")
  }

  test("an MLmodel without a lightgbm flavor names the file and the flavors it has") {
    val dir = tempDir.resolve("mlflow-sklearn-flavor")
    write(dir.resolve("MLmodel"), "flavors:\n  python_function:\n    loader_module: mlflow.sklearn\n  sklearn:\n    pickled_model: model.pkl\n")
    val e = intercept[IllegalArgumentException](TreeModel.load(dir.toString, hadoopConf))
    assert(e.getMessage.contains(s"MLmodel' has no lightgbm flavor (its flavors: python_function, sklearn); " +
      "expected an MLflow model saved by mlflow.lightgbm"), e.getMessage)
    assert(e.getMessage.contains(dir.toString), e.getMessage)
  }

  test("an MLmodel naming a missing model file, or not YAML, says so") {
    val missing = mlflowDir("mlflow-missing", lightgbmFlavor("model.lgb", "lightgbm.basic.Booster"), Map.empty)
    val e1 = intercept[FileNotFoundException](TreeModel.load(missing.toString, hadoopConf))
    assert(e1.getMessage.contains(s"names the model file 'model.lgb', which is missing from '$missing'"), e1.getMessage)
    val broken = tempDir.resolve("mlflow-broken")
    write(broken.resolve("MLmodel"), "flavors: [unclosed\n  : :")
    val e2 = intercept[IllegalArgumentException](TreeModel.load(broken.toString, hadoopConf))
    assert(e2.getMessage.contains("MLmodel' is not a readable MLmodel YAML file"), e2.getMessage)
  }
}
