import sbt._

import scala.xml.{Elem, Node}
import scala.xml.transform.{RewriteRule, RuleTransformer}

/**
 * What the published Maven artifacts say about themselves. The version is the Python package's
 * (`__version__` in python/treescore/__init__.py, which the wheel's metadata reads too), so the
 * wheel and the jars of one release always agree.
 */
object Release {
  val version: String = {
    val VersionLine = """__version__ = "([^"]+)"""".r
    IO.readLines(file("python") / "treescore" / "__init__.py").collectFirst { case VersionLine(v) => v }
      .getOrElse(sys.error("python/treescore/__init__.py has no __version__ line"))
  }

  val organization = "io.github.treescore"
  val homepage: URL = url("https://github.com/treescore/treescore")

  /** The folder dev/release publishes the Maven repository into. */
  val mavenRepository: File = file("target/release/maven").getAbsoluteFile

  /**
   * The POM with `provided` dependencies added: Spark's own artifacts, which the build takes from
   * a pyspark release rather than from Maven (Central does not serve every Spark release here),
   * so sbt cannot list them itself.
   */
  def withProvided(pom: Node, provided: Seq[(String, String, String)]): Node =
    new RuleTransformer(new RewriteRule {
      override def transform(node: Node): Seq[Node] = node match {
        case deps: Elem if deps.label == "dependencies" =>
          deps.copy(child = deps.child ++ provided.map { case (group, artifact, version) =>
            <dependency>
              <groupId>{group}</groupId>
              <artifactId>{artifact}</artifactId>
              <version>{version}</version>
              <scope>provided</scope>
            </dependency>
          })
        case other => other
      }
    }).transform(pom).head
}
