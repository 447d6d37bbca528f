package treescore.sql

import java.nio.charset.StandardCharsets

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import treescore.ensemble.{ModelScorer, Scorable, SpecIO}
import treescore.model.{MlflowModelDir, TreeModel}

/**
 * Models named in SQL by path or sent as bytes (Spark Connect), loaded on the driver at
 * analysis time. Analysis runs again for every query, so what was loaded is kept, keyed by
 * content (bytes) or by the file's path, length and modification time (paths): an unchanged
 * model is parsed once; a replaced file is read again.
 */
object ModelSources {
  /** How many loaded models are kept; each holds its model text on the driver. */
  private val Kept = 16

  private val cache = new java.util.LinkedHashMap[String, Scorable](Kept, 0.75f, true) {
    override def removeEldestEntry(eldest: java.util.Map.Entry[String, Scorable]): Boolean = size() > Kept
  }

  /**
   * A LightGBM text model file, an MLflow LightGBM model directory, or a saved scorer folder
   * (spec.json + models/), from any Hadoop path. A model is returned as a [[ModelScorer]]
   * reading its own feature names.
   */
  def load(path: String, hadoopConf: Configuration): Scorable = {
    val p = new Path(path)
    val fs = p.getFileSystem(hadoopConf)
    if (!fs.exists(p)) throw new java.io.FileNotFoundException(s"treescore: no model file or scorer folder at '$path'")
    val status = fs.getFileStatus(p)
    val spec = new Path(p, SpecIO.SpecFile)
    val isScorerFolder = status.isDirectory && fs.exists(spec)
    if (status.isDirectory && !isScorerFolder && !fs.exists(new Path(p, MlflowModelDir.MLmodelFile))) {
      throw new java.io.FileNotFoundException(s"treescore: '$path' is a directory with neither ${SpecIO.SpecFile} " +
        s"nor ${MlflowModelDir.MLmodelFile}; expected a LightGBM text model file, a scorer folder saved by " +
        "treescore (spec.json + models/) or an MLflow LightGBM model directory")
    }
    // The file whose length and modification time say whether the model changed since it was loaded.
    val identity =
      if (isScorerFolder) fs.getFileStatus(spec)
      else if (status.isDirectory) fs.getFileStatus(MlflowModelDir.modelFile(fs, p, path))
      else status
    val key = s"path:${status.getPath}:${identity.getPath}:${identity.getLen}:${identity.getModificationTime}"
    cached(key) {
      if (isScorerFolder) SpecIO.load(path, hadoopConf) else ModelScorer(TreeModel.load(path, hadoopConf))
    }
  }

  /** A model from its LightGBM text, as UTF-8 bytes. */
  def fromBytes(bytes: Array[Byte]): TreeModel = {
    val key = "text:" + TreeModel.sha256Hex(bytes)
    cached(key)(ModelScorer(TreeModel.fromString(new String(bytes, StandardCharsets.UTF_8)))) match {
      case ModelScorer(model, _, _) => model
      case other => throw new IllegalStateException(s"treescore: expected a model, found ${other.describe}")
    }
  }

  private def cached(key: String)(load: => Scorable): Scorable = {
    cache.synchronized(Option(cache.get(key))).getOrElse {
      val loaded = load // outside the lock: a large model must not stall other sessions' analysis
      cache.synchronized(cache.put(key, loaded))
      loaded
    }
  }
}
