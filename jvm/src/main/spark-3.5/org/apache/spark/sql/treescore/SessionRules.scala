package org.apache.spark.sql.treescore

import org.apache.spark.sql.{SparkSession, SparkSessionExtensions}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule

/**
 * A session's optimizer rules, and adding treescore's to a running session (Spark 3.5 shim).
 * The extensions are `private[sql]`, and Spark builds their rules afresh each time its
 * optimizer runs; a running session takes rules and strategies through `experimental`.
 */
object SessionRules {
  def preCBO(session: SparkSession): Seq[Rule[LogicalPlan]] = session.extensions.buildPreCBORules(session)

  def extraOptimizations(session: SparkSession): Seq[Rule[LogicalPlan]] = session.experimental.extraOptimizations

  /**
   * Gives a running session what `injected` holds, but its columnar rules, which a session takes
   * only as it is built: functions registered as the line's extensions register them (4.3
   * qualifies their names), strategies and pre-CBO rules through `experimental`.
   */
  def addToRunning(session: SparkSession, injected: SparkSessionExtensions): Unit = {
    injected.registerFunctions(session.sessionState.functionRegistry)
    session.experimental.extraStrategies ++= injected.buildPlannerStrategies(session)
    session.experimental.extraOptimizations ++= injected.buildPreCBORules(session)
  }
}
