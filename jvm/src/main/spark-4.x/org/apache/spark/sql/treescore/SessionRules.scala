package org.apache.spark.sql.treescore

import org.apache.spark.sql.{SparkSession, SparkSessionExtensions}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.classic

/**
 * A session's optimizer rules, and adding treescore's to a running session (Spark 4.x shim).
 * The extensions are `private[sql]` and belong to the classic session, and Spark builds their
 * rules afresh each time its optimizer runs; a running session takes rules and strategies
 * through `experimental`.
 */
object SessionRules {
  def preCBO(session: SparkSession): Seq[Rule[LogicalPlan]] = {
    val classicSession = session.asInstanceOf[classic.SparkSession]
    classicSession.extensions.buildPreCBORules(classicSession)
  }

  def extraOptimizations(session: SparkSession): Seq[Rule[LogicalPlan]] =
    session.asInstanceOf[classic.SparkSession].experimental.extraOptimizations

  /**
   * Gives a running session what `injected` holds, but its columnar rules, which a session takes
   * only as it is built: functions registered as the line's extensions register them (4.3
   * qualifies their names), strategies and pre-CBO rules through `experimental`.
   */
  def addToRunning(session: SparkSession, injected: SparkSessionExtensions): Unit = {
    val classicSession = session.asInstanceOf[classic.SparkSession]
    injected.registerFunctions(classicSession.sessionState.functionRegistry)
    classicSession.experimental.extraStrategies ++= injected.buildPlannerStrategies(classicSession)
    classicSession.experimental.extraOptimizations ++= injected.buildPreCBORules(classicSession)
  }
}
