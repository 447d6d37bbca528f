package treescore.model

import java.io.FileNotFoundException

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory
import org.apache.hadoop.fs.{FileSystem, Path}

/**
 * Finds the LightGBM text model inside an MLflow LightGBM model directory, without MLflow.
 *
 * `mlflow.lightgbm.save_model` / `log_model` write a directory holding an `MLmodel` YAML file
 * whose `flavors.lightgbm` section names the model file (`data`) and the saved object's class
 * (`model_class`). A `lightgbm.basic.Booster` is saved with `Booster.save_model`, LightGBM's
 * text format, as `model.lgb`: that is what treescore reads. The scikit-learn classes
 * (`lightgbm.sklearn.LGBMRegressor`, ...) are saved as a pickle (`model.pkl`) or skops
 * (`model.skops`) file instead; reading a pickle runs arbitrary code, so treescore refuses
 * it and says how to save a Booster instead. (Layout as written by MLflow 2.16 through 3.x;
 * MLflow versions before `model_class` existed saved only Boosters.)
 *
 * MLmodel is read with Jackson's YAML reader, which Spark ships (jackson-dataformat-yaml).
 */
object MlflowModelDir {
  val MLmodelFile = "MLmodel"
  val BoosterClass = "lightgbm.basic.Booster"

  private lazy val yaml = new ObjectMapper(new YAMLFactory())

  /** The model file of the MLflow model directory `dir` (`shown` as the user wrote it). */
  def modelFile(fs: FileSystem, dir: Path, shown: String): Path = {
    val mlmodel = new Path(dir, MLmodelFile)
    if (!fs.exists(mlmodel)) {
      throw new FileNotFoundException(s"treescore: '$shown' is a directory without an $MLmodelFile file; " +
        "expected a LightGBM text model file or an MLflow LightGBM model directory")
    }
    val all = flavors(fs, mlmodel)
    val flavor = all.path("lightgbm")
    if (!flavor.isObject) {
      val present = if (all.isObject && all.size > 0) all.fieldNames().asScala.mkString(", ") else "none"
      throw new IllegalArgumentException(s"treescore: '$mlmodel' has no lightgbm flavor (its flavors: $present); " +
        "expected an MLflow model saved by mlflow.lightgbm")
    }
    val data = flavor.path("data").asText("")
    if (data.isEmpty) {
      throw new IllegalArgumentException(s"treescore: the lightgbm flavor in '$mlmodel' names no model file (data)")
    }
    val modelClass = flavor.path("model_class").asText(BoosterClass)
    if (modelClass != BoosterClass) {
      throw new IllegalArgumentException(s"treescore: '$shown' holds a $modelClass saved by MLflow as '$data', " +
        "a pickle or skops file, which treescore does not read (unpickling runs arbitrary code). Log the booster " +
        "instead, mlflow.lightgbm.log_model(model.booster_, ...), which MLflow saves as LightGBM text, or load " +
        "the estimator in Python and pass it to treescore.Model.load")
    }
    val file = new Path(dir, data)
    if (!fs.exists(file)) {
      throw new FileNotFoundException(s"treescore: '$mlmodel' names the model file '$data', which is missing from '$shown'")
    }
    file
  }

  private def flavors(fs: FileSystem, mlmodel: Path): JsonNode = {
    val in = fs.open(mlmodel)
    val root = try yaml.readTree(in) catch {
      case e: Exception =>
        throw new IllegalArgumentException(s"treescore: '$mlmodel' is not a readable MLmodel YAML file: " +
          e.getMessage.linesIterator.next(), e)
    } finally in.close()
    if (root == null || !root.isObject) {
      throw new IllegalArgumentException(s"treescore: '$mlmodel' is not an MLmodel file: expected a YAML mapping")
    }
    root.path("flavors")
  }
}
