package treescore.sql

import org.apache.spark.sql.SparkSession

import treescore.TreescoreConf
import treescore.ensemble.{ModelScorer, Scorable}
import treescore.model.TreeModel

/**
 * Named models for SQL, per SparkSession: `treescore_score('demand_v3', ...)` resolves the
 * name on the driver, at analysis time, into the same expression `functions.score` builds;
 * executors only ever see the resolved model.
 *
 * A name is registered either in memory, from Scala or Python (`register`), or as a path in
 * the session's SQL conf, which plain SQL and Spark Connect clients can set:
 * {{{ SET spark.treescore.model.demand_v3 = /models/demand_v3.txt }}}
 * The path names a LightGBM text model, an MLflow LightGBM model directory or a saved scorer
 * folder; it is read when the name is first used (and again when the file changes). A name
 * registered in memory wins over the conf.
 */
object ModelRegistry {
  import TreescoreConf.{ModelNamePrefix => ConfPrefix}

  // Weak keys: a stopped, unreferenced session takes its models with it.
  private val bySession = new java.util.WeakHashMap[SparkSession, Map[String, Scorable]]()

  def register(session: SparkSession, name: String, scorable: Scorable): Unit = {
    checkName(name)
    bySession.synchronized {
      val current = Option(bySession.get(session)).getOrElse(Map.empty)
      bySession.put(session, current + (name -> scorable))
    }
  }

  def register(session: SparkSession, name: String, model: TreeModel): Unit = register(session, name, ModelScorer(model))

  /** Registers the model file or scorer folder at `path`, read now so a bad path fails here. */
  def registerPath(session: SparkSession, name: String, path: String): Unit =
    register(session, name, ModelSources.load(path, session.sessionState.newHadoopConf()))

  /** Removes an in-memory registration; true if there was one. */
  def unregister(session: SparkSession, name: String): Boolean = bySession.synchronized {
    val current = Option(bySession.get(session)).getOrElse(Map.empty)
    bySession.put(session, current - name)
    current.contains(name)
  }

  /** Every name the session can score: registered in memory or set in its conf. */
  def names(session: SparkSession): Seq[String] = {
    val inMemory = bySession.synchronized(Option(bySession.get(session)).getOrElse(Map.empty)).keys
    val inConf = session.conf.getAll.keys.filter(_.startsWith(ConfPrefix)).map(_.stripPrefix(ConfPrefix))
    (inMemory ++ inConf).toSeq.distinct.sorted
  }

  def namesArray(session: SparkSession): Array[String] = names(session).toArray

  /** The scorer registered as `name`; an AnalysisException naming it and the known names otherwise. */
  def resolve(session: SparkSession, name: String): Scorable = {
    val inMemory = bySession.synchronized(Option(bySession.get(session)).flatMap(_.get(name)))
    inMemory.getOrElse {
      session.conf.getOption(ConfPrefix + name) match {
        case Some(path) =>
          try ModelSources.load(path.trim, session.sessionState.newHadoopConf())
          catch {
            case e: Exception =>
              throw SqlErrors.analysis(s"treescore: the model '$name' ($ConfPrefix$name = '$path') cannot be loaded: " +
                e.getMessage.stripPrefix("treescore: "), Some(e))
          }
        case None =>
          val known = names(session)
          throw SqlErrors.analysis(s"treescore: no model is registered as '$name'; " +
            (if (known.isEmpty) "none are registered" else s"registered: ${known.mkString(", ")}") +
            s". Register one with treescore.register(spark, name, model) or SET $ConfPrefix<name> = <path>")
      }
    }
  }

  private def checkName(name: String): Unit = {
    if (name == null || name.trim.isEmpty || name != name.trim) {
      throw new IllegalArgumentException(s"treescore: a model name must be non-empty text without surrounding spaces, got '$name'")
    }
  }
}
