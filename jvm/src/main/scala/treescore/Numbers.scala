package treescore

import scala.util.Try

/**
 * Strict integer parsing that answers None instead of throwing. Scala 2.13's `toIntOption`
 * does the same, but the Spark 3.5 jar is built with Scala 2.12, which lacks it.
 */
object Numbers {
  def int(text: String): Option[Int] = Try(Integer.parseInt(text)).toOption
  def long(text: String): Option[Long] = Try(java.lang.Long.parseLong(text)).toOption
}
