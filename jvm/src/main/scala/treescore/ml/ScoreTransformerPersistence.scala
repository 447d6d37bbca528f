package treescore.ml

import java.io.FileNotFoundException

import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.spark.ml.util.{DefaultParamsReadable, MLReader, MLWriter}

import treescore.ensemble.SpecIO
import treescore.model.TreeModel

/**
 * A saved [[ScoreTransformer]] is a folder holding
 *  - `metadata/`: Spark's params metadata (class, uid, params), as DefaultParamsWriter writes it;
 *  - `model/<sha256>.txt`: the LightGBM model text, for a stage scoring one model; or
 *  - `scorer/`: an ensemble, route, cascade or grid in treescore's spec format (docs/spec-format.md).
 * Python saves and loads through these same classes, so either language reads what the other wrote.
 */
private[ml] object ScoreTransformerFiles {
  val ModelFolder = "model"
  val ScorerFolder = "scorer"
}

private[ml] final class ScoreTransformerWriter(stage: ScoreTransformer) extends MLWriter {
  import ScoreTransformerFiles._

  override protected def saveImpl(path: String): Unit = {
    stage.paramsWriter.session(sparkSession).save(path)
    val conf = sparkSession.sparkContext.hadoopConfiguration
    stage.scored match {
      case ScoreTarget.Model(model) =>
        // Named by its SHA-256, which guards the text as a spec's sha256 entries do.
        val file = new Path(new Path(path, ModelFolder), s"${model.contentHash}.txt")
        SpecIO.writeText(SpecIO.plainFileSystem(file, conf), file, model.text)
      case ScoreTarget.Program(scorable) =>
        SpecIO.save(scorable, new Path(path, ScorerFolder).toString, conf)
    }
  }
}

private[ml] final class ScoreTransformerReader extends MLReader[ScoreTransformer] {
  import ScoreTransformerFiles._

  override def load(path: String): ScoreTransformer = {
    val params = new DefaultParamsReadable[ScoreTransformer] {}.read.session(sparkSession).load(path)
    params.withTarget(target(path))
  }

  private def target(path: String): ScoreTarget = {
    val conf = sparkSession.sparkContext.hadoopConfiguration
    val folder = new Path(path)
    val fs = folder.getFileSystem(conf)
    val scorer = new Path(folder, ScorerFolder)
    val model = new Path(folder, ModelFolder)
    if (fs.exists(scorer)) ScoreTarget.Program(SpecIO.load(scorer.toString, conf))
    else if (fs.exists(model)) ScoreTarget.Model(loadModel(fs, model))
    else throw new FileNotFoundException(
      s"treescore: '$path' has neither a $ModelFolder/ nor a $ScorerFolder/ folder; it is not a saved ScoreTransformer")
  }

  private def loadModel(fs: FileSystem, folder: Path): TreeModel = {
    val files = fs.listStatus(folder).map(_.getPath).filter(_.getName.endsWith(".txt"))
    if (files.length != 1) {
      throw new IllegalArgumentException(
        s"treescore: expected one <sha256>.txt model file in '$folder', found ${files.length}")
    }
    // The file is named by its SHA-256, so a changed or damaged model fails here, naming the file.
    TreeModel.load(files.head.toString, files.head.getName.stripSuffix(".txt"))
  }
}
