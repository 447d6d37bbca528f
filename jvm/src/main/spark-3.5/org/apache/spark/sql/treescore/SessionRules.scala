package org.apache.spark.sql.treescore

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule

/**
 * The pre-CBO optimizer rules a session's extensions give it (Spark 3.5 shim): the extensions
 * are `private[sql]`, and Spark builds these rules afresh each time its optimizer runs.
 */
object SessionRules {
  def preCBO(session: SparkSession): Seq[Rule[LogicalPlan]] = session.extensions.buildPreCBORules(session)
}
