package treescore.sql

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.{CreateArray, CreateMap, Expression, ExpressionInfo, Literal}
import org.apache.spark.sql.catalyst.util.{ArrayData, MapData}
import org.apache.spark.sql.treescore.ColumnBridge
import org.apache.spark.sql.types.{ArrayType, BinaryType, Decimal, MapType, StringType}
import org.apache.spark.unsafe.types.UTF8String

import treescore.{functions, Numbers, ScoreOptions}
import treescore.ensemble.{GridScorer, ModelScorer, Scorable, Scorer, SpecIO}

/**
 * treescore's SQL functions, injected by [[treescore.TreescoreExtensions]]. Each resolves its
 * model on the driver, at analysis time, and builds exactly the expression `functions.score`
 * builds, so batching and parity are the same as from the DataFrame API.
 *
 * {{{
 *   treescore_score('demand_v3', f1, f2, ...)          -- a registered name; no features: columns named like them
 *   treescore_score('demand_v3', map('kind', 'contrib'), f1, f2, ...)
 *   treescore_score_grid('demand_v3', 'discount', array(0.0, 0.05, 0.1)
 *                        [, map('price_after', 'price * (1 - discount)') [, 'decreasing']])
 *   treescore_score_model('/models/m.txt' | X'...model text bytes...', [options,] f1, ...)
 *   treescore_score_spec('{"treescore_spec": 1, ...}', [map('kind', 'contrib'),] model_text_bytes, ...)
 *   treescore_describe('demand_v3')
 *   treescore_feature_names(X'...model text bytes...')  -- what a Connect client asks of a model
 * }}}
 * Options are a map of strings: kind (prediction, raw, leaf, contrib), start_iteration,
 * num_iterations; an ensemble, route, cascade or grid takes kind prediction or contrib only.
 * The model, name, spec and options must be literals.
 */
object SqlFunctions {
  type Builder = Seq[Expression] => Expression

  val all: Seq[(FunctionIdentifier, ExpressionInfo, Builder)] = Seq(
    function("treescore_score", scoreNamed),
    function("treescore_score_grid", scoreGridNamed),
    function("treescore_score_model", scoreModel),
    function("treescore_score_spec", scoreSpec),
    function("treescore_describe", describe),
    function("treescore_feature_names", featureNames))

  private def function(name: String, builder: Builder): (FunctionIdentifier, ExpressionInfo, Builder) =
    (FunctionIdentifier(name), new ExpressionInfo(getClass.getName, null, name),
      (args: Seq[Expression]) => withAnalysisErrors(name)(builder(args)))

  private def scoreNamed(args: Seq[Expression]): Expression = {
    val name = text(args, 0, "treescore_score", "the name of a registered model")
    scoreWith(registered(name), args.drop(1), s"the model '$name'")
  }

  private def scoreGridNamed(args: Seq[Expression]): Expression = {
    val fn = "treescore_score_grid"
    if (args.length < 3 || args.length > 5) {
      throw new IllegalArgumentException(s"treescore: $fn takes (name, vary, array of values [, map of derived inputs " +
        s"[, monotone]]), got ${args.length} arguments")
    }
    val name = text(args, 0, fn, "the name of a registered model")
    val scorer = registered(name) match {
      case s: Scorer => s
      case g: GridScorer => throw new IllegalArgumentException(s"treescore: '$name' is already a grid (${g.describe})")
    }
    val derived = if (args.length > 3) stringMap(args(3), fn, "derived inputs") else Map.empty[String, String]
    val monotone = if (args.length > 4) text(args, 4, fn, "monotone") else "none"
    ColumnBridge.expression(functions.scoreGrid(scorer, text(args, 1, fn, "the input to vary"),
      numbers(args(2), fn), derived, monotone))
  }

  private def scoreModel(args: Seq[Expression]): Expression = {
    val fn = "treescore_score_model"
    val model = literal(args, 0, fn, "a model path (string) or the model's text (binary)") match {
      case (path: UTF8String, StringType) =>
        ModelSources.load(path.toString, SparkSession.active.sessionState.newHadoopConf())
      case (bytes: Array[Byte], BinaryType) => ModelScorer(ModelSources.fromBytes(bytes))
      case (_, other) => throw new IllegalArgumentException(
        s"treescore: $fn takes a model path (string) or the model's text (binary) first, got ${other.simpleString}")
    }
    scoreWith(model, args.drop(1), "the model")
  }

  private def scoreSpec(args: Seq[Expression]): Expression = {
    val fn = "treescore_score_spec"
    val spec = text(args, 0, fn, "a scorer spec (JSON)")
    val options = args.lift(1).collect {
      case first if first.resolved && first.dataType.isInstanceOf[MapType] => scoreOptions(stringMap(first, fn, "options"))
    }
    val models = args.indices.drop(if (options.isDefined) 2 else 1).map(i => literal(args, i, fn, "a model's text (binary)") match {
      case (bytes: Array[Byte], BinaryType) => ModelSources.fromBytes(bytes)
      case (_, other) => throw new IllegalArgumentException(
        s"treescore: $fn takes model texts (binary) after the spec, got ${other.simpleString}")
    })
    val hadoopConf = SparkSession.active.sessionState.newHadoopConf()
    val scorable = SpecIO.fromJson(spec, path => ModelSources.load(path, hadoopConf) match {
      case ModelScorer(model, _, _) => model
      case other => throw new IllegalArgumentException(s"'$path' holds ${other.describe}, expected a model file")
    }, models.map(m => m.contentHash -> m).toMap)
    ColumnBridge.expression(functions.score(scorable, options.getOrElse(ScoreOptions.Default)))
  }

  private def describe(args: Seq[Expression]): Expression = {
    if (args.length != 1) throw new IllegalArgumentException("treescore: treescore_describe takes one model name")
    Literal(registered(text(args, 0, "treescore_describe", "the name of a registered model")).describe)
  }

  /** The model's feature names, read by the server's own model-text checks (ModelText). */
  private def featureNames(args: Seq[Expression]): Expression = {
    val fn = "treescore_feature_names"
    if (args.length != 1) throw new IllegalArgumentException(s"treescore: $fn takes one argument, the model's text (binary)")
    literal(args, 0, fn, "the model's text (binary)") match {
      case (bytes: Array[Byte], BinaryType) =>
        Literal.create(ModelSources.fromBytes(bytes).featureNames, ArrayType(StringType, containsNull = false))
      case (_, other) => throw new IllegalArgumentException(
        s"treescore: $fn takes the model's text (binary), got ${other.simpleString}")
    }
  }

  private def registered(name: String): Scorable = ModelRegistry.resolve(SparkSession.active, name)

  /** A model's call with optional options and features; other scorers read their inputs by name. */
  private def scoreWith(scorable: Scorable, rest: Seq[Expression], what: String): Expression = {
    val (options, features) = rest.headOption match {
      case Some(first) if first.resolved && first.dataType.isInstanceOf[MapType] =>
        (scoreOptions(stringMap(first, "treescore_score", "options")), rest.drop(1))
      case _ => (ScoreOptions.Default, rest)
    }
    scorable match {
      case ModelScorer(model, columns, false) if columns == model.featureNames =>
        ColumnBridge.expression(functions.score(model, options, features.map(ColumnBridge.column): _*))
      case other if features.nonEmpty =>
        throw new IllegalArgumentException(s"treescore: $what is ${other.describe}, which reads its inputs from the " +
          "columns named like them: pass no feature columns")
      case other => ColumnBridge.expression(functions.score(other, options))
    }
  }

  private def scoreOptions(map: Map[String, String]): ScoreOptions = {
    val known = Set("kind", "start_iteration", "num_iterations")
    map.keys.find(k => !known(k)).foreach { k =>
      throw new IllegalArgumentException(s"treescore: unknown option '$k'; expected kind, start_iteration or num_iterations")
    }
    def int(key: String, default: Int): Int = map.get(key).map { v =>
      Numbers.int(v.trim).getOrElse(throw new IllegalArgumentException(s"treescore: option $key must be an integer, got '$v'"))
    }.getOrElse(default)
    ScoreOptions(map.getOrElse("kind", "prediction"), int("start_iteration", 0), int("num_iterations", -1))
  }

  /** The value of a literal (foldable) argument, with its type. */
  private def literal(args: Seq[Expression], i: Int, fn: String, expected: String): (Any, org.apache.spark.sql.types.DataType) = {
    if (i >= args.length) throw new IllegalArgumentException(s"treescore: $fn needs ${ordinal(i)} argument: $expected")
    val e = args(i)
    if (!e.resolved || !e.foldable) {
      throw new IllegalArgumentException(s"treescore: the ${ordinal(i)} argument of $fn must be a literal ($expected), got ${e.sql}")
    }
    (e.eval(), e.dataType)
  }

  private def text(args: Seq[Expression], i: Int, fn: String, expected: String): String =
    literal(args, i, fn, expected) match {
      case (s: UTF8String, StringType) => s.toString
      case (_, other) => throw new IllegalArgumentException(
        s"treescore: the ${ordinal(i)} argument of $fn must be a string ($expected), got ${other.simpleString}")
    }

  /** Numbers of an array literal; elements are read one by one, so array(0, 0.05, 1e-1) works before coercion. */
  private def numbers(e: Expression, fn: String): Seq[Double] = {
    def number(v: Any): Double = v match {
      case d: Decimal => d.toDouble
      case n: java.lang.Number => n.doubleValue()
      case other => throw new IllegalArgumentException(s"treescore: $fn's grid values must be numbers, got $other")
    }
    e match {
      case CreateArray(children, _) if children.forall(c => c.resolved && c.foldable) => children.map(c => number(c.eval()))
      case a if a.resolved && a.foldable && a.dataType.isInstanceOf[ArrayType] =>
        val data = a.eval().asInstanceOf[ArrayData]
        data.toSeq[Any](a.dataType.asInstanceOf[ArrayType].elementType).map(number)
      case other => throw new IllegalArgumentException(s"treescore: $fn's grid values must be a literal array, got ${other.sql}")
    }
  }

  /** A map<string, string> literal, e.g. map('kind', 'contrib'). */
  private def stringMap(e: Expression, fn: String, what: String): Map[String, String] = {
    def str(v: Any): String = if (v == null) null else v.toString
    e match {
      case CreateMap(children, _) if children.forall(c => c.resolved && c.foldable) =>
        children.grouped(2).map(kv => str(kv(0).eval()) -> str(kv(1).eval())).toMap
      case m if m.resolved && m.foldable && m.dataType.isInstanceOf[MapType] =>
        val t = m.dataType.asInstanceOf[MapType]
        val data = m.eval().asInstanceOf[MapData]
        data.keyArray().toSeq[Any](t.keyType).map(str).zip(data.valueArray().toSeq[Any](t.valueType).map(str)).toMap
      case other => throw new IllegalArgumentException(s"treescore: $fn's $what must be a literal map of strings, got ${other.sql}")
    }
  }

  private def ordinal(i: Int): String = Seq("first", "second", "third", "fourth", "fifth").lift(i).getOrElse(s"argument ${i + 1}")

  /** Errors in building a call are analysis errors naming the function, as Spark's own are. */
  private def withAnalysisErrors(fn: String)(build: => Expression): Expression =
    try build catch {
      case e: org.apache.spark.sql.AnalysisException => throw e
      case e @ (_: IllegalArgumentException | _: java.io.IOException) =>
        throw SqlErrors.analysis(s"treescore: $fn: ${Option(e.getMessage).getOrElse(e.toString).stripPrefix("treescore: ")}", Some(e))
    }
}
