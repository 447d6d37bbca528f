package org.apache.spark.sql.treescore

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.classic

/**
 * A copy of a session with some settings changed (Spark 4.x shim): `cloneSession` is
 * `private[sql]` and belongs to the classic session a plan's relation holds.
 */
object SessionCopies {
  def withSettings(session: SparkSession, settings: Map[String, String]): SparkSession = {
    val copy = session.asInstanceOf[classic.SparkSession].cloneSession()
    settings.foreach { case (key, value) => copy.sessionState.conf.setConfString(key, value) }
    copy
  }
}
