package treescore.nativelib

import java.io.InputStream
import java.nio.file.{Files, Path, StandardCopyOption}

import scala.util.control.NonFatal

import org.slf4j.LoggerFactory

/**
 * Loads treescore's native library from the jar, once per JVM.
 *
 * The library sits in the jar under `treescore/native/<os>/<arch>/`. It is copied to a fresh
 * temporary folder (one per JVM, so executors sharing a host never race on a file), loaded,
 * then deleted: the loaded mapping outlives the file, and nothing is left in /tmp. A `lazy val` makes concurrent first calls from many tasks load
 * exactly once; a failure is kept and rethrown, with the platform named, on every later call.
 */
object NativeLoader {

  /** The platform folder name, e.g. `linux/x86_64`, as build/natives.py names the folders it fills. */
  val platform: String = Platforms.current

  private def resourceFolder(platform: String) = s"treescore/native/$platform"

  // One library per platform: LightGBM and the C++ runtime are linked into it.
  private val jniLibrary = Seq("libtreescore_jni.so", "libtreescore_jni.dylib")

  private lazy val loaded: Either[Throwable, Unit] =
    try { loadAll(platform); ready = true; Right(()) }
    catch { case NonFatal(e) => Left(e); case e: LinkageError => Left(e) }
  @volatile private var ready = false

  /** Loads the libraries if this JVM has not yet; throws a descriptive error if they cannot be. */
  def ensureLoaded(): Unit = loaded.fold(e => throw e, identity)

  /** Whether the libraries are loaded in this JVM; never loads them. */
  def isLoaded: Boolean = ready

  /** Loads the libraries of `platform` from the jar; separate from `platform` so tests can name another. */
  private[treescore] def loadAll(platform: String): Unit = {
    val source = resourceFolder(platform)
    val jni = jniLibrary.find(name => resourceExists(source, name)).getOrElse(throw new UnsatisfiedLinkError(
      s"treescore has no native library for this platform: ${Platforms.describe(platform)}"))
    val folder = Files.createTempDirectory("treescore-native-")
    try {
      load(source, jni, folder)
      // Says where the library came from: an executor gets it inside the jar Spark shipped to it.
      LoggerFactory.getLogger(getClass.getName.stripSuffix("$")).info(
        s"treescore: loaded native library $jni for $platform from " +
          Option(getClass.getProtectionDomain.getCodeSource).map(_.getLocation).getOrElse("the class path"))
    } finally {
      deleteRecursively(folder)
    }
  }

  private def load(source: String, name: String, folder: Path): Unit = {
    val file = folder.resolve(name)
    val in = resource(source, name)
    try Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING)
    finally in.close()
    try System.load(file.toString)
    catch {
      // A glibc older than the library's floor fails here, naming the symbol version it lacks.
      case e: UnsatisfiedLinkError =>
        throw new UnsatisfiedLinkError(
          s"treescore could not load its native library $name (${e.getMessage}) on ${Platforms.describe(platform)}")
    }
  }

  private def resource(source: String, name: String): InputStream =
    Option(getClass.getClassLoader.getResourceAsStream(s"$source/$name"))
      .getOrElse(throw new UnsatisfiedLinkError(s"treescore's jar lacks $source/$name"))

  private def resourceExists(source: String, name: String): Boolean =
    getClass.getClassLoader.getResource(s"$source/$name") != null

  private def deleteRecursively(folder: Path): Unit = {
    val files = Files.list(folder)
    try files.forEach(f => Files.deleteIfExists(f))
    finally files.close()
    Files.deleteIfExists(folder)
  }
}
