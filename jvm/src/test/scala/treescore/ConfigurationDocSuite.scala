package treescore

import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Paths}

import org.scalatest.funsuite.AnyFunSuite

/** docs/configuration.md lists exactly the settings TreescoreConf declares, as it declares them. */
class ConfigurationDocSuite extends AnyFunSuite {
  private def doc: String = {
    // Tests run from the build root or from the project's folder under jvm/target.
    val candidates = Seq(Paths.get("docs/configuration.md"), Paths.get("../../../../docs/configuration.md"))
    val path = candidates.find(Files.isRegularFile(_)).getOrElse(fail(s"docs/configuration.md not found from ${Paths.get("").toAbsolutePath}"))
    new String(Files.readAllBytes(path), StandardCharsets.UTF_8)
  }

  test("the reference table is the one generated from the declarations") {
    val table = TreescoreConf.markdownTable
    assert(doc.contains(table), s"docs/configuration.md must contain this table, generated from TreescoreConf:\n$table")
  }

  test("every declared key is spark.treescore.*, declared once") {
    val keys = TreescoreConf.all.map(_.key)
    assert(keys.distinct == keys)
    assert(keys.forall(_.startsWith("spark.treescore.")))
  }

  test("bad values name the key and say what was expected") {
    val rows = intercept[IllegalArgumentException](TreescoreConf.BatchRows.read(Some("0")))
    assert(rows.getMessage == "spark.treescore.batch.rows must be a positive integer, got '0'")
    val enabled = intercept[IllegalArgumentException](TreescoreConf.BatchEnabled.read(Some("yes")))
    assert(enabled.getMessage == "spark.treescore.batch.enabled must be true or false, got 'yes'")
    val cache = intercept[IllegalArgumentException](TreescoreConf.CacheMaxBytes.read(Some("lots")))
    assert(cache.getMessage == "spark.treescore.cache.maxBytes must be a size such as auto, 512m or 2g, got 'lots'")
    assert(TreescoreConf.CacheMaxBytes.read(None).isEmpty)
    assert(TreescoreConf.CacheMaxBytes.read(Some("512m")).contains(512L << 20))
    assert(TreescoreConf.BroadcastThresholdBytes.read(Some("1k")) == 1024L)
  }
}
