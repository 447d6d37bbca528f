package org.apache.spark.sql.treescore

import org.apache.spark.sql.SparkSession

/**
 * A copy of a session with some settings changed (Spark 3.5 shim): `cloneSession` is
 * `private[sql]`, so it is reached from here.
 */
object SessionCopies {
  def withSettings(session: SparkSession, settings: Map[String, String]): SparkSession = {
    val copy = session.cloneSession()
    settings.foreach { case (key, value) => copy.sessionState.conf.setConfString(key, value) }
    copy
  }
}
