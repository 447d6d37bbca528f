import sbt._

/**
 * Generates `treescore.wire.WireCodes` from wire/codes.txt, the one definition of the codes the
 * JVM, the native library and Python pass one another: per group an object with each member's
 * code and the names users write, in code order.
 */
object WireCodes {
  val source: File = file("wire/codes.txt").getAbsoluteFile
  val limitsSource: File = file("wire/limits.txt").getAbsoluteFile

  def generate(into: File): Seq[File] = {
    val Member = """([A-Za-z0-9]+)=([0-9]+)""".r
    val groups = IO.readLines(source).map(_.trim).filter(l => l.nonEmpty && !l.startsWith("#")).map { line =>
      val group :: members = line.split("\\s+").toList
      val parsed = members.map { case Member(name, code) => name -> code.toInt
        case other => sys.error(s"$source: '$other' in group $group is not Name=code") }
      if (parsed.map(_._2) != parsed.indices) sys.error(s"$source: $group's codes do not count from 0 without gaps")
      val constants = parsed.map { case (name, code) => s"    final val $name = $code" }
      val names = parsed.map { case (name, _) => "\"" + name.toLowerCase + "\"" }.mkString(", ")
      s"  object $group {\n${constants.mkString("\n")}\n    /** What users write for each code, in code order. */\n" +
        s"    val names: Seq[String] = Seq($names)\n  }"
    }
    val file = into / "treescore" / "wire" / "WireCodes.scala"
    IO.write(file,
      s"""// Generated from wire/codes.txt by project/WireCodes.scala: edit that file, not this one.
         |package treescore.wire
         |
         |/** The codes the JVM, the native library and Python pass one another (wire/codes.txt). */
         |object WireCodes {
         |${groups.mkString("\n\n")}
         |}
         |""".stripMargin)
    Seq(file, generateLimits(into))
  }

  /** `treescore.wire.WireLimits` from wire/limits.txt: one constant per limit. */
  private def generateLimits(into: File): File = {
    val Limit = """([A-Za-z0-9]+)=([0-9]+)""".r
    val limits = IO.readLines(limitsSource).map(_.trim).filter(l => l.nonEmpty && !l.startsWith("#")).map {
      case Limit(name, value) => s"  final val $name = ${value}L"
      case other => sys.error(s"$limitsSource: '$other' is not Name=value")
    }
    val file = into / "treescore" / "wire" / "WireLimits.scala"
    IO.write(file,
      s"""// Generated from wire/limits.txt by project/WireCodes.scala: edit that file, not this one.
         |package treescore.wire
         |
         |/** Limits the JVM and the native library agree on (wire/limits.txt). */
         |object WireLimits {
         |${limits.mkString("\n")}
         |}
         |""".stripMargin)
    file
  }
}
