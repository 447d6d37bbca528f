// treescore's JVM side: one jar per supported Spark line (project/SparkLines.scala), all from
// the sources in jvm/src plus a shim folder per API generation. Each line compiles and tests
// against the jars of a pyspark release from PyPI (build/pyspark_jars.py), because Maven
// Central does not serve every Spark release here. Native code is built beforehand, once per
// architecture (build/natives.py), and packed into every jar under treescore/native/<os>/<arch>/,
// so each jar is self-contained.
import scala.sys.process._

lazy val sparkJars = taskKey[Seq[File]]("The Spark jars of this line's pyspark release")

/** The Python that runs the build's fetch scripts, which need pip: dev/build passes its venv's. */
def buildPython: String = sys.env.getOrElse("TREESCORE_PYTHON", "python3")

/** The JNI libraries of every architecture, staged by build/natives.py before sbt runs. */
lazy val stagedNatives = file("target/native-resources").getAbsoluteFile

lazy val root = (project in file("."))
  .aggregate(SparkLines.all.map(l => LocalProject(l.id)): _*)
  .settings(publish / skip := true)

def lineProject(spark: SparkLine): Project = {
  val jvm = file("jvm").getAbsoluteFile
  Project(spark.id, jvm / "target" / "lines" / spark.id)
    .settings(
      // Published as io.github.treescore:treescore-spark_<line>_<scala binary> (sbt adds the Scala suffix).
      name := s"treescore-spark_${spark.line}",
      moduleName := name.value,  // as is: sbt's default would turn the line's dot into a dash
      organization := Release.organization,
      version := Release.version,
      description := s"LightGBM scoring inside Apache Spark ${spark.line}, batched through native code " +
        "(Linux x86_64 and aarch64 libraries included)",
      homepage := Some(Release.homepage),
      licenses := Seq("MIT" -> url("https://opensource.org/license/mit")),
      scmInfo := Some(ScmInfo(Release.homepage, s"scm:git:${Release.homepage}.git")),
      developers := List(Developer("treescore", "The treescore developers", "treescore@users.noreply.github.com",
                                   Release.homepage)),
      scalaVersion := spark.scala,
      // Scala and Spark are the cluster's: provided, so a user's build neither ships nor upgrades them.
      autoScalaLibrary := false,
      libraryDependencies += "org.scala-lang" % "scala-library" % spark.scala % Provided,
      pomPostProcess := (pom => Release.withProvided(pom,
        Seq(("org.apache.spark", s"spark-sql_${scalaBinaryVersion.value}", spark.pyspark)))),
      publishMavenStyle := true,
      versionScheme := Some("early-semver"),
      publishTo := Some(Resolver.file("treescore-release", Release.mavenRepository)),
      target := jvm / "target" / s"spark-${spark.line}",
      Compile / unmanagedSourceDirectories := Seq(jvm / "src" / "main" / "scala", jvm / "src" / "main" / "java",
                                                  jvm / "src" / "main" / spark.shims),
      Test / unmanagedSourceDirectories := Seq(jvm / "src" / "test" / "scala"),
      Compile / unmanagedResourceDirectories := Seq(jvm / "src" / "main" / "resources"),
      Test / unmanagedResourceDirectories := Seq(jvm / "src" / "test" / "resources"),
      scalacOptions ++= Seq("-deprecation", "-feature"),
      // The shipped classes target the line's oldest Java, which also keeps newer Java library
      // calls out of them; tests run on the build's own JDK.
      Compile / javacOptions ++= Seq("--release", spark.javaRelease),
      Compile / scalacOptions ++= Seq("-release", spark.javaRelease),
      Test / javacOptions := Nil,
      Test / scalacOptions := scalacOptions.value,
      sparkJars := {
        val folder = Process(Seq(buildPython, "build/pyspark_jars.py", spark.pyspark), file(".").getAbsoluteFile).!!.trim
        // sbt brings this line's Scala itself; pyspark's copy of the same release is left out. So is
        // the Spark Connect client jar of 4.x, whose own copies of server classes (ArrowUtils,
        // with other signatures) would shadow Spark's on a flat classpath, ahead of them by name.
        (file(folder) * "*.jar").get.filterNot(_.getName.matches("scala-(library|reflect|compiler)-.*|spark-connect-client-jvm.*"))
      },
      // Spark (and what Spark ships, such as Jackson's YAML reader) is provided by the cluster.
      Compile / unmanagedJars ++= sparkJars.value.classpath,
      libraryDependencies += "org.scalatest" %% "scalatest" % "3.2.19" % Test,
      // The wire codes shared with native code and Python, generated from their one definition.
      Compile / sourceGenerators += Def.task { WireCodes.generate((Compile / sourceManaged).value) }.taskValue,
      // The native libraries, copied under this line's managed resources so the jar keeps their
      // treescore/native/<os>/<arch>/ paths. sbt only packages them: build/natives.py builds them.
      Compile / resourceGenerators += Def.task {
        val index = stagedNatives / "treescore" / "native" / "platforms.txt"
        if (!index.isFile) sys.error(s"no native libraries staged in $stagedNatives: run build/natives.py first (dev/build does)")
        val into = (Compile / resourceManaged).value
        IO.delete(into / "treescore" / "native")
        val copies = (stagedNatives ** ("*.so" || "platforms.txt")).get.map(f => f -> into / IO.relativize(stagedNatives, f).get)
        IO.copy(copies, CopyOptions().withPreserveExecutable(true)).toSeq
      }.taskValue,
      // Spark on Java 17 needs these opens; tests run in their own JVM to apply them.
      Test / fork := true,
      Test / javaOptions ++= Seq(
        "-Xmx4g",
        "--add-opens=java.base/java.lang=ALL-UNNAMED",
        "--add-opens=java.base/java.lang.invoke=ALL-UNNAMED",
        "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
        "--add-opens=java.base/java.io=ALL-UNNAMED",
        "--add-opens=java.base/java.net=ALL-UNNAMED",
        "--add-opens=java.base/java.nio=ALL-UNNAMED",
        "--add-opens=java.base/java.util=ALL-UNNAMED",
        "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
        "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
        "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
        "--add-opens=java.base/sun.nio.cs=ALL-UNNAMED",
        "--add-opens=java.base/sun.security.action=ALL-UNNAMED",
        "--add-opens=java.base/sun.util.calendar=ALL-UNNAMED",
        "-Djdk.reflect.useDirectMethodHandle=false"
      ),
      Test / parallelExecution := false,
      Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oD"),
      // The jar published for this line: our classes plus the native libraries, nothing else.
      Compile / packageBin / artifactPath := jvm / "target" / "jars" / spark.jarName
    )
}

// One project per line (spark35, spark40, ...), so `build/sbt package` builds every jar and
// `build/sbt spark43/test` tests one line.
lazy val lines = new CompositeProject {
  override def componentProjects: Seq[Project] = SparkLines.all.map(lineProject)
}
