package treescore.model

import java.nio.charset.StandardCharsets

import org.apache.commons.io.IOUtils
import org.apache.hadoop.fs.{FileSystem, Path}

/** Reads a whole file on any Hadoop file system as UTF-8 text (model files, ensemble specs). */
object HadoopText {
  // commons-io rather than InputStream.readAllBytes: the Spark 3.5 jar must run on Java 8.
  def read(fs: FileSystem, path: Path): String = {
    val in = fs.open(path)
    try IOUtils.toString(in, StandardCharsets.UTF_8) finally in.close()
  }
}
