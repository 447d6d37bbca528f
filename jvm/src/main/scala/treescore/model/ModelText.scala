package treescore.model

import java.nio.charset.StandardCharsets

import scala.collection.mutable

import treescore.Numbers

/** What treescore needs to know of a model on the driver, read from its text. */
final case class ModelHeader(
    featureNames: IndexedSeq[String],
    categoricalFeatures: IndexedSeq[String],
    numClasses: Int,
    numTreesPerIteration: Int,
    numTrees: Int,
    objective: Option[String],
    linearTrees: Boolean = false,
    predictionIsRaw: Boolean = false,
    featuresRead: scala.collection.immutable.BitSet = scala.collection.immutable.BitSet.empty,
    shapTables: TreeShapTables = TreeShapTables(hasCounts = false, leaves = 0, replayedLeaves = 0, replayedShare = 0,
      tableAddends = 0),
    mostLeaves: Int = 1,
    nanThreshold: Boolean = false)

/** The model text is not a well-formed LightGBM model; `problem` says where and why. */
final class InvalidModelException(val source: String, val problem: String)
  extends IllegalArgumentException(s"treescore: $source is not a valid LightGBM text model: $problem")

/**
 * Reads and structurally checks LightGBM's text model format before LightGBM ever sees it.
 *
 * LightGBM's own loader trusts its input: truncated or damaged text makes it read past the
 * end of the buffer, index arrays out of range or loop forever, and the crash takes the whole
 * executor JVM down. So every fact the loader and the predictor rely on is checked here: the
 * header keys, the tree count and byte sizes, each tree's array lengths against num_leaves,
 * every index's range, every number, that each tree is a tree (no cycles, every leaf
 * reached once), and the end marker.
 */
object ModelText {

  def parse(text: String, source: String): ModelHeader = new Parser(text, source).parse()

  /**
   * Whether an objective line ("binary sigmoid:1", "regression sqrt", ...) makes LightGBM's
   * prediction the raw score unchanged: the regression and ranking objectives, without the
   * square root that `reg_sqrt` adds (LightGBM's ObjectiveFunction::ConvertOutput). A model
   * trained with a custom objective has none of these lines' transforms either.
   */
  private[model] def identityOutput(objective: Seq[String]): Boolean =
    IdentityObjectives.contains(objective.head) && !objective.contains("sqrt")

  private val IdentityObjectives =
    Set("regression", "regression_l1", "huber", "fair", "quantile", "mape", "lambdarank", "rank_xendcg", "custom")

  private final class Parser(text: String, source: String) {
    // Tree offsets in tree_sizes are byte counts; Latin-1 maps each byte to one char.
    private val bytes = new String(text.getBytes(StandardCharsets.UTF_8), StandardCharsets.ISO_8859_1)
    private var pos = 0

    private def fail(problem: String): Nothing = throw new InvalidModelException(source, problem)

    private def atEnd: Boolean = pos >= bytes.length

    private def peekLine(): String = {
      val end = bytes.indexOf('\n', pos)
      val line = if (end < 0) bytes.substring(pos) else bytes.substring(pos, end)
      line.stripSuffix("\r")
    }

    private def nextLine(): String = {
      val line = peekLine()
      val end = bytes.indexOf('\n', pos)
      pos = if (end < 0) bytes.length else end + 1
      line
    }

    private def skipBlankLines(): Unit = while (!atEnd && peekLine().isEmpty) nextLine()

    def parse(): ModelHeader = {
      if (text.isEmpty) fail("the text is empty")
      skipBlankLines()
      if (atEnd || nextLine() != "tree") fail(notTextModel)
      val header = readHeader()
      val maxFeatureIdx = int(header, "max_feature_idx", min = 0)
      val numClasses = int(header, "num_class", min = 1)
      val perIteration = header.get("num_tree_per_iteration").map(_ => int(header, "num_tree_per_iteration", min = 1))
        .getOrElse(numClasses)
      int(header, "label_index", min = 0)
      required(header, "version")
      val names = utf8(required(header, "feature_names")).split(' ').toIndexedSeq
      if (names.length != maxFeatureIdx + 1) {
        fail(s"feature_names lists ${names.length} names but max_feature_idx=$maxFeatureIdx needs ${maxFeatureIdx + 1}")
      }
      if (names.exists(_.isEmpty)) fail("feature_names contains an empty name")
      val infos = required(header, "feature_infos").split(' ')
      if (infos.length != maxFeatureIdx + 1) {
        fail(s"feature_infos has ${infos.length} entries, expected ${maxFeatureIdx + 1}")
      }
      header.get("monotone_constraints").foreach { v =>
        val constraints = v.split(' ')
        if (constraints.length != maxFeatureIdx + 1) fail("monotone_constraints has the wrong number of entries")
        // LightGBM reads them as int8 and writes only -1, 0 and 1.
        constraints.foreach(c => if (!Numbers.int(c).exists(n => n >= -1 && n <= 1)) {
          fail(s"monotone_constraints has '${c.take(30)}', expected -1, 0 or 1")
        })
      }
      val treesStart = pos
      val sizes = header.get("tree_sizes").map(v => if (v.isEmpty) Array.empty[Long] else v.split(' ').map(longValue("tree_sizes", _)))
      val numTrees = readTrees(maxFeatureIdx, treesStart, sizes)
      if (numTrees % perIteration != 0) {
        fail(s"$numTrees trees is not a whole number of iterations of $perIteration trees")
      }
      // feature_infos holds "[min:max]" for a numerical feature, "none" for an unused one and
      // the category list "c1:c2:..." for a categorical one.
      val categorical = names.zip(infos).collect { case (name, info) if !info.startsWith("[") && info != "none" => name }
      val objective = header.get("objective").map(_.split(' ').toSeq)
      ModelHeader(names, categorical, numClasses, perIteration, numTrees, objective.map(_.head), linearTrees,
        objective.forall(identityOutput), scala.collection.immutable.BitSet.empty ++ featuresRead, shapTables.result,
        mostLeaves, nanThreshold)
    }

    /** Why text that does not start with 'tree' is not a model, naming the usual mix-ups. */
    private def notTextModel: String = {
      val start = text.take(4096)
      val head = start.dropWhile(_.isWhitespace)
      val howToSave = "treescore reads LightGBM's text format, as booster.save_model() or model_to_string() writes it"
      if (head.startsWith("{") || head.startsWith("[")) {
        s"it is JSON (as booster.dump_model() gives), not a text model; $howToSave"
      } else if (head.startsWith("\uFEFF")) {
        "it starts with a byte order mark (U+FEFF) before the line 'tree'; save the file as UTF-8 without a BOM"
      } else if (start.exists(c => c == '\uFFFD' || (c < ' ' && c != '\n' && c != '\r' && c != '\t'))) {
        s"it is binary data, not text (a compressed, pickled or binary model file?); $howToSave"
      } else "it does not start with the line 'tree'"
    }

    private def readHeader(): Map[String, String] = {
      val keys = mutable.LinkedHashMap.empty[String, String]
      while (!atEnd && !peekLine().startsWith("Tree=") && peekLine() != "end of trees") {
        val line = nextLine()
        if (line.nonEmpty) {
          val eq = line.indexOf('=')
          if (eq < 0) keys(line) = ""
          else {
            val key = line.substring(0, eq)
            val value = line.substring(eq + 1)
            if (value.contains('=') && key != "feature_names" && key != "monotone_constraints") {
              fail(s"header line '${line.take(60)}' has more than one '='")
            }
            keys(key) = value
          }
        }
      }
      if (atEnd) fail("it ends before its trees (the text is truncated)")
      keys.toMap
    }

    // Whether some tree has linear leaves (is_linear=1): then only LightGBM's engine evaluates it.
    private var linearTrees = false
    // The features some tree splits on or some linear leaf reads: no output depends on the others.
    private val featuresRead = mutable.BitSet.empty
    private val shapTables = new TreeShapTables.Builder
    // What decides the engine's layout (EngineLayout): the most leaves of a tree, and whether
    // some numerical node's threshold is NaN.
    private var mostLeaves = 1
    private var nanThreshold = false

    /** Reads every tree block; returns the count. */
    private def readTrees(maxFeatureIdx: Int, treesStart: Int, sizes: Option[Array[Long]]): Int = {
      var index = 0
      while (!atEnd && peekLine().startsWith("Tree=")) {
        val blockStart = pos
        if (nextLine() != s"Tree=$index") fail(s"tree number $index is labelled '${bytes.substring(blockStart, pos).trim}'")
        val tree = readTreeFields(index)
        checkTree(index, tree, maxFeatureIdx)
        skipBlankLines()
        sizes.foreach { s =>
          if (index >= s.length) fail(s"tree_sizes lists ${s.length} trees but there are more")
          if (pos - blockStart != s(index)) {
            val why = if (bytes.contains('\r')) "its lines end in CRLF (a Windows copy or git's autocrlf?), " +
              "while tree_sizes counts LightGBM's LF line ends" else "the text is damaged"
            fail(s"tree $index takes ${pos - blockStart} bytes but tree_sizes says ${s(index)} ($why)")
          }
        }
        index += 1
      }
      if (atEnd || nextLine() != "end of trees") {
        fail(s"the line 'end of trees' is missing after tree ${index - 1} (the text is truncated or damaged)")
      }
      sizes.foreach { s => if (s.length != index) fail(s"tree_sizes lists ${s.length} trees but there are $index") }
      if (index == 0) fail("it has no trees")
      checkTrailer()
      index
    }

    /**
     * After the trees LightGBM writes feature importances, then its parameters and parser
     * sections, each closed by an end line. A missing end line means the copy was cut short.
     */
    private def checkTrailer(): Unit = {
      val lines = bytes.substring(pos).split("\r?\n").toSeq
      def closed(open: String, close: String): Boolean = {
        val start = lines.indexOf(open)
        start < 0 || lines.indexOf(close, start) > start
      }
      val importancesWithoutParameters = lines.contains("feature_importances:") && !lines.contains("parameters:")
      if (importancesWithoutParameters || !closed("parameters:", "end of parameters")) {
        fail("the text is truncated after its trees ('end of parameters' is missing)")
      }
      if (!closed("parser:", "end of parser")) fail("the text is truncated ('end of parser' is missing)")
    }

    private def readTreeFields(index: Int): Map[String, String] = {
      val fields = mutable.HashMap.empty[String, String]
      while (!atEnd && peekLine().nonEmpty) {
        val line = nextLine()
        val eq = line.indexOf('=')
        if (eq <= 0) fail(s"tree $index has a line without 'key=value': '${line.take(60)}'")
        if (fields.size >= 22) fail(s"tree $index has more fields than LightGBM reads")
        fields(line.substring(0, eq)) = line.substring(eq + 1)
      }
      if (atEnd) fail(s"tree $index is cut off (the text is truncated)")
      fields.toMap
    }

    /**
     * Each field is checked as the type LightGBM 4.x reads it into (src/io/tree.cpp): num_leaves,
     * num_cat, split_feature, left_child, right_child, leaf_count, internal_count and
     * cat_boundaries are int; decision_type is int8; cat_threshold is uint32 (bitset words);
     * threshold, leaf_value, leaf_weight, internal_value, internal_weight and shrinkage are
     * double; split_gain is float, read here as a double since only its form matters.
     */
    private def checkTree(index: Int, f: Map[String, String], maxFeatureIdx: Int): Unit = {
      val where = s"tree $index"
      val numLeaves = int(f, "num_leaves", min = 1, where)
      mostLeaves = math.max(mostLeaves, numLeaves)
      val numCat = int(f, "num_cat", min = 0, where)
      val isLinear = f.get("is_linear").exists(v => int(f, "is_linear", min = 0, where) != 0 || v != "0")
      doubles(f, "leaf_value", numLeaves, where, required = true)
      f.get("shrinkage").foreach(doubleValue(s"$where shrinkage", _))
      if (isLinear) {
        checkLinearLeaves(f, numLeaves, where, maxFeatureIdx)
        linearTrees = true
      }
      // LightGBM reads nothing more of a tree that never split, and writes its other lists
      // empty (leaf_weight=), so they are not checked against num_leaves.
      if (numLeaves == 1) {
        shapTables.addLeaf()
        return
      }
      ints(f, "leaf_count", numLeaves, where, required = false)
      doubles(f, "leaf_weight", numLeaves, where, required = false)
      val internal = numLeaves - 1
      val left = ints(f, "left_child", internal, where, required = true)
      val right = ints(f, "right_child", internal, where, required = true)
      val features = ints(f, "split_feature", internal, where, required = true)
      val thresholds = doubles(f, "threshold", internal, where, required = true)
      val decisions = ints(f, "decision_type", internal, where, required = false)
      doubles(f, "split_gain", internal, where, required = false)
      doubles(f, "internal_value", internal, where, required = false)
      doubles(f, "internal_weight", internal, where, required = false)
      ints(f, "internal_count", internal, where, required = false)
      features.zipWithIndex.foreach { case (feature, node) =>
        if (feature < 0 || feature > maxFeatureIdx) {
          fail(s"$where node $node splits on feature $feature, outside 0..$maxFeatureIdx")
        }
        featuresRead += feature
      }
      decisions.foreach(d => if (d < 0 || d > 127) fail(s"$where has decision_type $d, outside 0..127"))
      val categorical = decisions.zipWithIndex.filter { case (d, _) => (d & 1) == 1 }.map(_._2)
      nanThreshold ||= thresholds.indices.exists(node =>
        thresholds(node).isNaN && (node >= decisions.length || (decisions(node) & 1) == 0))
      if (categorical.nonEmpty || numCat > 0) {
        val bounds = ints(f, "cat_boundaries", numCat + 1, where, required = true)
        if (bounds.head != 0 || bounds.sliding(2).exists(p => p.length == 2 && p(1) < p(0))) {
          fail(s"$where has cat_boundaries that do not rise from 0")
        }
        // 32-bit bitset words, unsigned: category 31 of a word sets its top bit (2^31 and more).
        uint32s(f, "cat_threshold", bounds.last, where)
        categorical.foreach { node =>
          val t = thresholds(node)
          if (t != t.floor || t < 0 || t >= numCat) {
            fail(s"$where node $node points at categorical split $t, outside 0..${numCat - 1}")
          }
        }
      }
      checkShape(where, left, right, numLeaves)
      shapTables.addTree(left, right, features, counted = f.contains("leaf_count") && f.contains("internal_count"))
    }

    /**
     * A linear tree's leaves: leaf_const per leaf, num_features per leaf, then that many feature
     * indexes (leaf_features) and coefficients (leaf_coeff) over all leaves, which LightGBM
     * writes with extra spaces between leaves. LightGBM copies exactly the counted entries, so
     * every count must hold.
     */
    private def checkLinearLeaves(f: Map[String, String], numLeaves: Int, where: String, maxFeatureIdx: Int): Unit = {
      doubles(f, "leaf_const", numLeaves, where, required = true)
      val counts = ints(f, "num_features", numLeaves, where, required = true)
      counts.foreach(c => if (c < 0 || c > maxFeatureIdx + 1) fail(s"$where has num_features $c, outside 0..${maxFeatureIdx + 1}"))
      val total = counts.sum
      def entries(key: String): Array[String] = {
        val found = f.getOrElse(key, fail(s"$where has no $key")).split(' ').filter(_.nonEmpty)
        if (found.length != total) fail(s"$where has ${found.length} values in $key, expected $total (the sum of num_features)")
        found
      }
      entries("leaf_features").foreach { v =>
        val feature = Numbers.int(v).getOrElse(fail(s"$where has '${v.take(30)}' in leaf_features, which is not an integer"))
        if (feature < 0 || feature > maxFeatureIdx) fail(s"$where has leaf feature $feature, outside 0..$maxFeatureIdx")
        featuresRead += feature
      }
      entries("leaf_coeff").foreach(doubleValue(s"$where leaf_coeff", _))
    }

    /** Every internal node and every leaf is reached from the root exactly once: no cycles. */
    private def checkShape(where: String, left: Array[Int], right: Array[Int], numLeaves: Int): Unit = {
      val seenNodes = new Array[Boolean](left.length)
      val seenLeaves = new Array[Boolean](numLeaves)
      val stack = mutable.Stack(0)
      while (stack.nonEmpty) {
        val node = stack.pop()
        if (seenNodes(node)) fail(s"$where reaches node $node twice (its children form a cycle)")
        seenNodes(node) = true
        for (child <- Seq(left(node), right(node))) {
          if (child >= 0) {
            if (child >= left.length) fail(s"$where node $node has child $child, outside 0..${left.length - 1}")
            stack.push(child)
          } else {
            val leaf = ~child
            if (leaf >= numLeaves) fail(s"$where node $node points at leaf $leaf, outside 0..${numLeaves - 1}")
            if (seenLeaves(leaf)) fail(s"$where reaches leaf $leaf twice")
            seenLeaves(leaf) = true
          }
        }
      }
      if (!seenNodes.forall(identity) || !seenLeaves.forall(identity)) fail(s"$where has nodes or leaves that no path reaches")
    }

    private def required(f: Map[String, String], key: String, where: String = "the header"): String =
      f.getOrElse(key, fail(s"$where has no $key"))

    private def int(f: Map[String, String], key: String, min: Int, where: String = "the header"): Int = {
      val v = required(f, key, where)
      val n = Numbers.int(v).getOrElse(fail(s"$where has $key='${v.take(30)}', which is not an integer"))
      if (n < min) fail(s"$where has $key=$n, expected at least $min")
      n
    }

    private def values(f: Map[String, String], key: String, count: Int, where: String, required: Boolean): Array[String] =
      f.get(key) match {
        case None if required => fail(s"$where has no $key")
        case None => Array.empty
        case Some(v) =>
          val parts = if (v.isEmpty) Array.empty[String] else v.split(' ')
          if (parts.length != count) fail(s"$where has ${parts.length} values in $key, expected $count")
          parts
      }

    private def ints(f: Map[String, String], key: String, count: Int, where: String, required: Boolean): Array[Int] =
      values(f, key, count, where, required).map(v =>
        Numbers.int(v).getOrElse(fail(s"$where has '${v.take(30)}' in $key, which is not an integer")))

    private def uint32s(f: Map[String, String], key: String, count: Int, where: String): Array[Long] =
      values(f, key, count, where, required = true).map(v => Numbers.long(v).filter(n => n >= 0 && n <= 0xFFFFFFFFL)
        .getOrElse(fail(s"$where has '${v.take(30)}' in $key, which is not an unsigned 32-bit integer")))

    private def doubles(f: Map[String, String], key: String, count: Int, where: String, required: Boolean): Array[Double] =
      values(f, key, count, where, required).map(doubleValue(s"$where $key", _))

    private def longValue(what: String, v: String): Long =
      Numbers.long(v).filter(_ >= 0).getOrElse(fail(s"$what has '${v.take(30)}', which is not a size"))

    // LightGBM prints and reads decimal numbers, plus inf/nan spelled C's way.
    private val Number = "[-+]?(?:(?:\\d+\\.?\\d*|\\.\\d+)(?:[eE][-+]?\\d+)?|inf|nan|-nan)".r

    private def doubleValue(what: String, v: String): Double = v match {
      case Number() => v.toLowerCase match {
        case "inf" | "+inf" => Double.PositiveInfinity
        case "-inf" => Double.NegativeInfinity
        case s if s.contains("nan") => Double.NaN
        case s => s.toDouble
      }
      case _ => fail(s"$what has '${v.take(30)}', which is not a number")
    }

    private def utf8(latin1: String): String =
      new String(latin1.getBytes(StandardCharsets.ISO_8859_1), StandardCharsets.UTF_8)
  }
}
