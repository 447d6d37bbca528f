import sbt._

/**
 * A Spark release line treescore builds one jar for. Catalyst's internals are not promised to
 * be stable across minor releases, so, like Comet and Delta, treescore compiles and tests a jar
 * per line, all from one source tree plus a small folder of shims per API generation.
 *
 * @param line        the line, "major.minor"; the jar is treescore-spark-<line>.jar
 * @param pyspark     the pyspark release whose bundled jars the line compiles and tests against
 * @param scala       the Scala release that pyspark's jars were built with
 * @param shims       the folder under jvm/src/main (and jvm/src/test) with this line's shims
 * @param javaRelease the oldest Java the line runs on, for `-release`
 */
case class SparkLine(line: String, pyspark: String, scala: String, shims: String, javaRelease: String) {
  /** The sbt project's id: spark35, spark40, ... */
  def id: String = "spark" + line.replace(".", "")
  def jarName: String = s"treescore-spark-$line.jar"
}

object SparkLines {
  /** The lines listed in build/spark-lines.txt, oldest first (dev/test reads the same file). */
  val all: Seq[SparkLine] = IO.readLines(file("build") / "spark-lines.txt")
    .map(_.trim).filter(l => l.nonEmpty && !l.startsWith("#"))
    .map(_.split("\\s+") match {
      case Array(line, pyspark, scala, shims, javaRelease) => SparkLine(line, pyspark, scala, shims, javaRelease)
      case other => sys.error(s"build/spark-lines.txt: expected 5 columns, got '${other.mkString(" ")}'")
    })
}
