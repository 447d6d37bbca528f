// A user's own Spark job that scores with treescore. Spark is provided by the cluster;
// treescore's jar (which carries its native libraries) is the only addition. Here the jar is
// taken from this repository's build; in your project, point `treescore.jar` at the jar the
// wheel ships (`python -c "import treescore; print(treescore.jar_path())"`).
name := "treescore-example-job"

// Spark is provided by the cluster. By default it comes from Maven Central; with
// -Dspark.jars.dir=DIR it is the folder of jars a Spark installation has (an installed
// pyspark's pyspark/jars), and the Scala release is the one those jars were built with.
val sparkJarsDir = sys.props.get("spark.jars.dir").map(file)
scalaVersion := sparkJarsDir.flatMap(dir => (dir * "scala-library-*.jar").get.headOption)
  .map(_.getName.stripPrefix("scala-library-").stripSuffix(".jar")).getOrElse("2.13.16")
libraryDependencies ++= (if (sparkJarsDir.isDefined) Nil
                         else Seq("org.apache.spark" %% "spark-sql" % sys.props.getOrElse("spark.version", "4.0.1") % Provided))
Compile / unmanagedJars ++= sparkJarsDir.toSeq.flatMap(dir => (dir * "*.jar").get
  .filterNot(_.getName.matches("scala-(library|reflect|compiler)-.*")))

Compile / unmanagedJars += file(sys.props.getOrElse("treescore.jar", "../../jvm/target/jars/treescore-spark-4.0.jar"))

Compile / packageBin / artifactPath := target.value / "example-job.jar"
