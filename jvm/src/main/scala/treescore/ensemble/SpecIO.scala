package treescore.ensemble

import java.io.FileNotFoundException
import java.nio.charset.StandardCharsets

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import com.fasterxml.jackson.databind.node.{ArrayNode, JsonNodeFactory, ObjectNode}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession

import treescore.model.{HadoopText, TreeModel}

/** A spec that does not describe a valid scorer; `where` is the JSON path of the offending part. */
final class InvalidSpecException(val where: String, val problem: String)
  extends IllegalArgumentException(s"treescore: invalid scorer spec at $where: $problem")

/**
 * Reads and writes scorers as a JSON spec (docs/spec-format.md) plus their model files:
 * a folder holding `spec.json` and `models/<sha256>.txt`. Loading checks everything up front
 * and names the offending part by JSON path: missing or damaged model files, weights that do
 * not match the members, unknown rules or transforms, column mappings naming features a model
 * does not have.
 */
object SpecIO {
  val SpecFile = "spec.json"
  val FormatVersion = 1
  private val mapper = new ObjectMapper()
  private val json = JsonNodeFactory.instance

  /** Loads a saved scorer folder from any Hadoop path. */
  def load(path: String, hadoopConf: Configuration): Scorable = {
    val folder = new Path(path)
    val fs = folder.getFileSystem(hadoopConf)
    val specPath = new Path(folder, SpecFile)
    if (!fs.exists(specPath)) throw new FileNotFoundException(s"treescore: no $SpecFile in '$path'")
    val text = HadoopText.read(fs, specPath)
    fromJson(text, reference => {
      val file = new Path(folder, reference)
      if (!fs.exists(file)) throw new FileNotFoundException(s"model file '$reference' is missing from '$path'")
      TreeModel.load(file.toString, hadoopConf)
    }, models = Map.empty)
  }

  def load(path: String): Scorable = load(path, SparkSession.active.sessionState.newHadoopConf())

  /**
   * Builds a scorer from a spec. A model node names either a `file` (resolved by `readFile`)
   * or, for specs built in memory (Python), a `model` content hash found in `models`.
   */
  def fromJson(text: String, readFile: String => TreeModel, models: Map[String, TreeModel]): Scorable = {
    val root = try mapper.readTree(text) catch {
      case e: Exception => throw new InvalidSpecException("$", s"not JSON: ${e.getMessage.linesIterator.next()}")
    }
    if (root == null || !root.isObject) throw new InvalidSpecException("$", "expected a JSON object")
    val version = root.path("treescore_spec").asInt(-1)
    if (version != FormatVersion) {
      throw new InvalidSpecException("$.treescore_spec", s"expected format version $FormatVersion, got ${root.get("treescore_spec")}")
    }
    new Reader(readFile, models).scorable(field(root, "scorer", "$"), "$.scorer")
  }

  /** Builds a scorer from an in-memory spec whose model nodes name content hashes (for Python). */
  def fromJson(text: String, models: java.util.Map[String, TreeModel]): Scorable =
    fromJson(text, f => throw new InvalidSpecException("$", s"in-memory specs cannot read model files ('$f')"),
      models.asScala.toMap)

  /** Writes `scorable` into the folder `path` (spec.json and models/), replacing nothing: the folder must not exist. */
  def save(scorable: Scorable, path: String, hadoopConf: Configuration): Unit = {
    val folder = new Path(path)
    val fs = plainFileSystem(folder, hadoopConf)
    if (fs.exists(folder)) throw new IllegalArgumentException(s"treescore: '$path' already exists")
    modelsOf(scorable).foreach(m => writeText(fs, new Path(folder, modelFile(m)), m.text))
    writeText(fs, new Path(folder, SpecFile), specJson(scorable, inMemory = false))
  }

  /** The models inside a scorable, distinct. */
  def modelsOf(scorable: Scorable): Array[TreeModel] = (scorable match {
    case s: Scorer => s.models
    case g: GridScorer => g.scorer.models
  }).toArray

  /** The spec as JSON; in memory, model nodes name content hashes instead of files (for Python). */
  def specJson(scorable: Scorable, inMemory: Boolean): String = {
    val spec = json.objectNode()
    spec.put("treescore_spec", FormatVersion)
    spec.set[JsonNode]("scorer", write(scorable, inMemory))
    mapper.writerWithDefaultPrettyPrinter().writeValueAsString(spec)
  }

  def save(scorable: Scorable, path: String): Unit = save(scorable, path, SparkSession.active.sessionState.newHadoopConf())

  private def modelFile(m: TreeModel): String = s"models/${m.contentHash}.txt"

  private def write(s: Scorable, inMemory: Boolean): ObjectNode = {
    def write(s: Scorable): ObjectNode = SpecIO.write(s, inMemory)
    val node = json.objectNode()
    s match {
      case m: ModelScorer =>
        node.put("type", "model")
        if (inMemory) node.put("model", m.model.contentHash)
        else node.put("file", modelFile(m.model)).put("sha256", m.model.contentHash)
        val renamed = m.model.featureNames.zip(m.columns).filter { case (f, c) => f != c }
        if (renamed.nonEmpty) {
          val columns = node.putObject("columns")
          renamed.foreach { case (f, c) => columns.put(f, c) }
        }
        if (m.raw) node.put("raw", true)
      case e: EnsembleScorer =>
        node.put("type", "ensemble").put("combine", e.combine.name)
        val members = node.putArray("members")
        e.members.foreach(m => members.add(write(m.scorer)))
        val weights = node.putArray("weights")
        e.members.foreach(m => weights.add(m.weight))
        val transforms = node.putArray("transforms")
        e.transforms.foreach {
          case OutputTransform.Clip(lo, hi) =>
            val bounds = transforms.addObject().putArray("clip")
            Seq(lo, hi).foreach(b => if (b.isInfinite) bounds.addNull() else bounds.add(b))
          case t => transforms.add(t.name)
        }
      case r: RoutedScorer =>
        node.put("type", "route").put("key", r.key).put("on_unknown_key", r.unknownKey.name)
        val routes = node.putObject("routes")
        r.routes.foreach { case (k, s) => routes.set[JsonNode](k, write(s)) }
        r.default.foreach(d => node.set[JsonNode]("default", write(d)))
      case c: CascadeScorer =>
        node.put("type", "cascade").put("accept_below", c.acceptBelow).put("accept_above", c.acceptAbove)
        node.set[JsonNode]("first", write(c.first))
        node.set[JsonNode]("full", write(c.full))
      case g: GridScorer =>
        node.put("type", "grid").put("monotone", g.monotone.name)
        node.set[JsonNode]("scorer", write(g.scorer))
        g.axes match {
          case Seq(GridAxis(vary, values)) => // one axis: the original form, which every version reads
            node.put("vary", vary)
            val array = node.putArray("values")
            values.foreach(v => array.add(v))
          case axes =>
            val list = node.putArray("vary")
            axes.foreach { axis =>
              val values = list.addObject().put("input", axis.input).putArray("values")
              axis.values.foreach(v => values.add(v))
            }
        }
        val derived = node.putObject("derived")
        g.derived.foreach { case (n, e) => derived.put(n, e) }
    }
    node
  }

  private def field(node: JsonNode, name: String, where: String): JsonNode =
    Option(node.get(name)).filterNot(_.isNull).getOrElse(throw new InvalidSpecException(where, s"'$name' is missing"))

  private final class Reader(readFile: String => TreeModel, models: Map[String, TreeModel]) {

    def scorable(node: JsonNode, where: String): Scorable = text(node, "type", where) match {
      case "grid" =>
        guard(where) {
          val axes = field(node, "vary", where) match {
            case one if one.isTextual =>
              Seq(GridAxis(one.asText(), array(node, "values", where).map(v => number(v, s"$where.values"))))
            case list: ArrayNode => list.elements().asScala.toSeq.zipWithIndex.map { case (axis, i) =>
              val at = s"$where.vary[$i]"
              GridAxis(text(axis, "input", at), array(axis, "values", at).map(v => number(v, s"$at.values")))
            }
            case _ => throw new InvalidSpecException(s"$where.vary",
              "expected an input name (with 'values') or a list of {\"input\": name, \"values\": [...]}")
          }
          val derived = Option(node.get("derived")).filterNot(_.isNull).map { d =>
            if (!d.isObject) throw new InvalidSpecException(s"$where.derived", "expected an object of SQL expressions")
            d.properties().iterator().asScala.map(e => e.getKey -> e.getValue.asText()).toSeq
          }.getOrElse(Nil)
          GridScorer(scorer(field(node, "scorer", where), s"$where.scorer"), axes, derived,
            Monotone.fromName(Option(node.get("monotone")).map(_.asText()).getOrElse("none")))
        }
      case _ => scorer(node, where)
    }

    def scorer(node: JsonNode, where: String): Scorer = text(node, "type", where) match {
      case "model" => guard(where) {
        val model = node.get("file") match {
          case f if f != null && !f.isNull =>
            val loaded = try readFile(f.asText()) catch {
              case e: InvalidSpecException => throw e
              case e: Exception => throw new InvalidSpecException(where, e.getMessage)
            }
            Option(node.get("sha256")).filterNot(_.isNull).map(_.asText()).foreach { expected =>
              if (expected != loaded.contentHash) {
                throw new InvalidSpecException(where, s"model file '${f.asText()}' has SHA-256 ${loaded.contentHash}, " +
                  s"but the spec expects $expected (the file was changed or damaged)")
              }
            }
            loaded
          case _ =>
            val key = text(node, "model", where)
            models.getOrElse(key, throw new InvalidSpecException(where, s"no model with hash $key was supplied"))
        }
        val columns = Option(node.get("columns")).filterNot(_.isNull).map { c =>
          c.properties().iterator().asScala.map(e => e.getKey -> e.getValue.asText()).toMap
        }.getOrElse(Map.empty)
        ModelScorer.withColumns(model, columns, Option(node.get("raw")).exists(_.asBoolean()))
      }
      case "ensemble" => guard(where) {
        val members = array(node, "members", where).zipWithIndex.map { case (m, i) => scorer(m, s"$where.members[$i]") }
        val weights = Option(node.get("weights")).filterNot(_.isNull)
          .map(_ => array(node, "weights", where).map(w => number(w, s"$where.weights")))
          .getOrElse(members.map(_ => 1.0))
        if (weights.length != members.length) {
          throw new InvalidSpecException(s"$where.weights", s"${members.length} members but ${weights.length} weights")
        }
        val transforms = Option(node.get("transforms")).filterNot(_.isNull)
          .map(_ => array(node, "transforms", where).zipWithIndex.map { case (t, i) => transform(t, s"$where.transforms[$i]") })
          .getOrElse(Nil)
        EnsembleScorer(members.zip(weights).map { case (s, w) => Member(s, w) },
          Combine.fromName(Option(node.get("combine")).map(_.asText()).getOrElse("mean")), transforms)
      }
      case "route" => guard(where) {
        val routes = field(node, "routes", where)
        if (!routes.isObject) throw new InvalidSpecException(s"$where.routes", "expected an object of key -> scorer")
        RoutedScorer(text(node, "key", where),
          routes.properties().iterator().asScala.map(e => e.getKey -> scorer(e.getValue, s"$where.routes.${e.getKey}")).toSeq,
          Option(node.get("default")).filterNot(_.isNull).map(d => scorer(d, s"$where.default")),
          UnknownKey.fromName(Option(node.get("on_unknown_key")).map(_.asText()).getOrElse("error")))
      }
      case "cascade" => guard(where) {
        CascadeScorer(scorer(field(node, "first", where), s"$where.first"), scorer(field(node, "full", where), s"$where.full"),
          number(field(node, "accept_below", where), s"$where.accept_below"),
          number(field(node, "accept_above", where), s"$where.accept_above"))
      }
      case "grid" => throw new InvalidSpecException(where, "a grid can only be the outermost scorer")
      case other => throw new InvalidSpecException(s"$where.type", s"unknown type '$other'; expected model, ensemble, route, cascade or grid")
    }

    private def transform(node: JsonNode, where: String): OutputTransform = guard(where) {
      if (node.isTextual) OutputTransform.fromName(node.asText())
      else if (node.isObject && node.has("clip")) {
        val bounds = array(node, "clip", where)
        if (bounds.length != 2) throw new InvalidSpecException(s"$where.clip", "expected [lo, hi] (null for no bound)")
        def bound(b: JsonNode, missing: Double) = if (b.isNull) missing else number(b, s"$where.clip")
        OutputTransform.Clip(bound(bounds(0), Double.NegativeInfinity), bound(bounds(1), Double.PositiveInfinity))
      } else throw new InvalidSpecException(where, "expected a transform name or {\"clip\": [lo, hi]}")
    }

    /** Re-labels construction errors (IllegalArgumentException) with the JSON path. */
    private def guard[T](where: String)(build: => T): T =
      try build catch {
        case e: InvalidSpecException => throw e
        case e: IllegalArgumentException => throw new InvalidSpecException(where, e.getMessage.stripPrefix("treescore: "))
      }

    private def text(node: JsonNode, name: String, where: String): String = {
      val v = field(node, name, where)
      if (!v.isTextual) throw new InvalidSpecException(s"$where.$name", "expected a string")
      v.asText()
    }

    private def array(node: JsonNode, name: String, where: String): Seq[JsonNode] = field(node, name, where) match {
      case a: ArrayNode => a.elements().asScala.toSeq
      case _ => throw new InvalidSpecException(s"$where.$name", "expected a list")
    }

    /** A number; infinities are the strings "Infinity" and "-Infinity", as the spec writer writes them (JSON has none). */
    private def number(node: JsonNode, where: String): Double = node match {
      case n if n.isNumber => n.asDouble()
      case t if t.isTextual && t.asText() == "Infinity" => Double.PositiveInfinity
      case t if t.isTextual && t.asText() == "-Infinity" => Double.NegativeInfinity
      case other => throw new InvalidSpecException(where, s"expected a number, got $other")
    }
  }

  /**
   * The file system of `path`, minus the hidden .crc files Hadoop's local file system writes:
   * they make a hand-edited spec or model unreadable, and the SHA-256 treescore records for
   * every model file already guards its text.
   */
  private[treescore] def plainFileSystem(path: Path, hadoopConf: Configuration): org.apache.hadoop.fs.FileSystem =
    path.getFileSystem(hadoopConf) match {
      case local: org.apache.hadoop.fs.LocalFileSystem => local.getRawFileSystem
      case other => other
    }

  private[treescore] def writeText(fs: org.apache.hadoop.fs.FileSystem, p: Path, text: String): Unit = {
    val out = fs.create(p, false)
    try out.write(text.getBytes(StandardCharsets.UTF_8)) finally out.close()
  }
}
