package treescore.model

import java.io.FileNotFoundException
import java.nio.charset.StandardCharsets
import java.security.MessageDigest

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession

/**
 * A LightGBM model as treescore ships it: its text, checked and summarised on the driver.
 *
 * The text travels with the query plan; executors load it natively once per JVM, keyed by
 * [[contentHash]]. A model larger than `spark.treescore.broadcast.thresholdBytes` travels as a
 * Spark broadcast instead (see [[ModelShipping]]), so each executor fetches and deserializes
 * it once, however many tasks use it. Equality is by content, so two loads of the same file
 * are the same model.
 *
 * {{{
 *   val model = TreeModel.load("s3a://bucket/models/demand.txt")
 *   model.featureNames   // Seq("price", "discount", ...)
 * }}}
 */
final class TreeModel private (modelText: String, val source: String) extends Serializable {

  /**
   * Checked once, where the model is made (on the driver, so a broken model fails there). The
   * summary travels with the model, so executors never parse the text again: that would cost
   * every task the time of a full check, seconds for a model of hundreds of megabytes.
   */
  private val header: ModelHeader = ModelText.parse(modelText, source)

  /** SHA-256 of the model text, in hex: the model's identity across the cluster. */
  val contentHash: String = TreeModel.sha256Hex(modelText.getBytes(StandardCharsets.UTF_8))

  /** Where the text is: inline, or in a broadcast once the model is shipped (custom serialization below). */
  @transient @volatile private var body: ModelShipping.Body = ModelShipping.Inline(modelText)

  /** The LightGBM model text. On an executor given a broadcast model, read from this JVM's copy. */
  def text: String = body.text

  /** Ships the text as a broadcast of `sc` if it is over `thresholdBytes`; once per model and context. */
  private[treescore] def shipIfLarge(sc: org.apache.spark.SparkContext, thresholdBytes: Long): Unit = synchronized {
    body = ModelShipping.ship(body, contentHash, sc, thresholdBytes)
  }

  /** Whether this model's text travels as a broadcast (of a live SparkContext) rather than in the plan. */
  def isBroadcast: Boolean = body.live.isDefined

  private def writeObject(out: java.io.ObjectOutputStream): Unit = {
    out.defaultWriteObject()
    ModelShipping.write(body, out)
  }

  private def readObject(in: java.io.ObjectInputStream): Unit = {
    in.defaultReadObject()
    body = ModelShipping.read(in)
  }

  def featureNames: Seq[String] = header.featureNames
  /** The feature names as a Java array, for Java and Python (py4j) callers. */
  def featureNamesArray: Array[String] = header.featureNames.toArray
  def numFeatures: Int = header.featureNames.length
  /** The features LightGBM splits on by category; they take integer category codes. */
  def categoricalFeatures: Seq[String] = header.categoricalFeatures
  def categoricalFeaturesArray: Array[String] = header.categoricalFeatures.toArray
  /**
   * Throws if some name stands for more than one feature: LightGBM refuses such names when it
   * trains, but an edited file can hold them, and reading columns by name would then feed one
   * column to several features. `how` says what the caller should do instead.
   */
  def requireUniqueFeatureNames(how: String): Unit = {
    val repeated = featureNames.zipWithIndex.groupBy(_._1).filter(_._2.length > 1).toSeq.sortBy(_._2.head._2)
    if (repeated.nonEmpty) {
      val described = repeated.map { case (name, at) => s"'$name' (features ${at.map(_._2).mkString(", ")})" }
      throw new IllegalArgumentException(s"treescore: model ${contentHash.take(12)} gives the same name to more " +
        s"than one feature: ${described.mkString("; ")}, so its features cannot be read by name; $how")
    }
  }
  def numClasses: Int = header.numClasses
  def numTrees: Int = header.numTrees
  def numIterations: Int = header.numTrees / header.numTreesPerIteration
  def objective: Option[String] = header.objective
  /** Whether the prediction is the raw score itself (an objective without an output transform). */
  def predictionIsRaw: Boolean = header.predictionIsRaw
  /** Whether some tree has linear leaves (LightGBM's linear_tree), which only LightGBM's engine evaluates. */
  def hasLinearTrees: Boolean = header.linearTrees
  /** What treescore's TreeSHAP would tabulate for this model. */
  def shapTables: TreeShapTables = header.shapTables
  /** The most leaves any one tree has. */
  def mostLeaves: Int = header.mostLeaves
  /** Whether some numerical node has a NaN threshold (only hand-made models do): it sends every value right. */
  def hasNanThreshold: Boolean = header.nanThreshold

  /** Whether some tree splits on feature `index` or some linear leaf reads it: no output of the model depends on the others. */
  def readsFeature(index: Int): Boolean = header.featuresRead.contains(index)

  override def equals(other: Any): Boolean = other match {
    case m: TreeModel => m.contentHash == contentHash
    case _ => false
  }
  override def hashCode(): Int = contentHash.hashCode
  override def toString: String = s"TreeModel(${contentHash.take(12)}, $numFeatures features, $numTrees trees)"
}

object TreeModel {

  /** SHA-256 of `bytes` in lower-case hex, as models are identified and checked. */
  def sha256Hex(bytes: Array[Byte]): String =
    MessageDigest.getInstance("SHA-256").digest(bytes).map("%02x".format(_)).mkString

  /** A model from LightGBM's text format, e.g. `booster.model_to_string()`. */
  def fromString(text: String): TreeModel = new TreeModel(text, "the model text")

  /**
   * Reads a LightGBM text model from any Hadoop file system path (file:, hdfs://, s3a://, ...),
   * or from an MLflow LightGBM model directory (see [[MlflowModelDir]]).
   */
  def load(path: String, hadoopConf: Configuration): TreeModel = {
    val p = new Path(path)
    val fs = p.getFileSystem(hadoopConf)
    if (!fs.exists(p)) throw new FileNotFoundException(s"treescore: no model file at '$path'")
    val (file, source) =
      if (fs.getFileStatus(p).isDirectory) {
        val inside = MlflowModelDir.modelFile(fs, p, path)
        (inside, s"model file '$inside' of the MLflow model '$path'")
      } else (p, s"model file '$path'")
    new TreeModel(HadoopText.read(fs, file), source)
  }

  /** Reads a model with the active session's Hadoop configuration. */
  def load(path: String): TreeModel = load(path, SparkSession.active.sessionState.newHadoopConf())

  /**
   * Reads a model and checks its SHA-256 (hex) against `expectedSha256`: structural checks
   * catch truncation and most damage, but a changed digit still parses as a valid, different
   * model; the checksum catches that.
   */
  def load(path: String, expectedSha256: String): TreeModel = {
    val model = load(path)
    if (!model.contentHash.equalsIgnoreCase(expectedSha256.trim)) {
      throw new InvalidModelException(s"model file '$path'",
        s"its SHA-256 is ${model.contentHash} but $expectedSha256 was expected (the file was changed or damaged)")
    }
    model
  }
}
