package org.apache.spark.sql.treescore

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.classic

/**
 * The pre-CBO optimizer rules a session's extensions give it (Spark 4.x shim): the extensions
 * are `private[sql]` and belong to the classic session, and Spark builds these rules afresh
 * each time its optimizer runs.
 */
object SessionRules {
  def preCBO(session: SparkSession): Seq[Rule[LogicalPlan]] = {
    val classicSession = session.asInstanceOf[classic.SparkSession]
    classicSession.extensions.buildPreCBORules(classicSession)
  }
}
