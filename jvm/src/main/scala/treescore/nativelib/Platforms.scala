package treescore.nativelib

import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Paths}

import scala.io.Source
import scala.util.Try

/**
 * The platform this JVM runs on, named as the jar's native folders name platforms
 * (`linux/x86_64`), and the platforms the jar carries libraries for, as
 * `treescore/native/platforms.txt` lists them (build/natives.py writes it).
 */
private[treescore] object Platforms {

  /** A platform the jar carries a library for, and the oldest glibc that library runs on. */
  final case class Supported(folder: String, glibcFloor: String) {
    override def toString: String = s"$folder with glibc $glibcFloor or newer"
  }

  val current: String = {
    val os = sys.props("os.name").toLowerCase match {
      case n if n.contains("linux") => "linux"
      case n if n.contains("mac") => "darwin"
      case n => n.replaceAll("\\W+", "")
    }
    val arch = sys.props("os.arch") match {
      case "amd64" | "x86_64" => "x86_64"
      case "aarch64" | "arm64" => "aarch64"
      case other => other
    }
    s"$os/$arch"
  }

  /** Every platform of the jar's index; empty if the jar has none. */
  lazy val supported: Seq[Supported] =
    Option(getClass.getClassLoader.getResourceAsStream("treescore/native/platforms.txt")).map { in =>
      val source = Source.fromInputStream(in, StandardCharsets.UTF_8.name)
      try source.getLines().map(_.trim).filter(_.nonEmpty).map(_.split("\\s+")).collect {
        case Array(folder, "glibc", floor) => Supported(folder, floor)
      }.toList
      finally source.close()
    }.getOrElse(Nil)

  /**
   * The C library of this process, for messages: `glibc 2.31`, read from the banner of the libc
   * the process has mapped, or what is known instead. Only failure paths ask: it reads libc's file.
   */
  def libc: String = {
    val mapped = Try(Files.readAllLines(Paths.get("/proc/self/maps")).toArray.map(_.toString.split("\\s+").last))
      .getOrElse(Array.empty[String])
    mapped.find(_.matches(".*/libc(\\.so\\.6|-[0-9.]+\\.so)")) match {
      case Some(path) =>
        val banner = Try(new String(Files.readAllBytes(Paths.get(path)), StandardCharsets.ISO_8859_1)).getOrElse("")
        "release version (\\d+\\.\\d+)".r.findFirstMatchIn(banner).map(m => s"glibc ${m.group(1)}")
          .getOrElse(s"a glibc of unknown version at $path")
      case None if mapped.exists(_.contains("musl")) => "musl libc, not glibc"
      case None => "no glibc found"
    }
  }

  /** This platform, its C library and the JVM's own names for it, then every supported platform. */
  def describe(platform: String): String = {
    val list = if (supported.isEmpty) "none (the jar has no treescore/native/platforms.txt)" else supported.mkString(", ")
    s"$platform ($libc; os.name=${sys.props("os.name")}, os.arch=${sys.props("os.arch")}). " +
      s"treescore's native libraries are for: $list"
  }
}
