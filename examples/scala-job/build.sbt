// A user's own Spark job that scores with treescore. Spark is provided by the cluster; treescore
// comes by its Maven coordinate, io.github.treescore:treescore-spark_<Spark line>_<Scala binary>,
// whose jar carries its native libraries. Spark and Scala are `provided` in its POM, so it adds
// nothing else to the job.
name := "treescore-example-job"

// The Spark line to build for, and where Spark comes from: by default Maven Central; with
// -Dspark.jars.dir=DIR, the folder of jars a Spark installation has (an installed pyspark's
// pyspark/jars), and the Scala release is the one those jars were built with.
val sparkLine = sys.props.getOrElse("spark.line", "4.3")
val sparkJarsDir = sys.props.get("spark.jars.dir").map(file)
scalaVersion := sparkJarsDir.flatMap(dir => (dir * "scala-library-*.jar").get.headOption)
  .map(_.getName.stripPrefix("scala-library-").stripSuffix(".jar")).getOrElse("2.13.16")
libraryDependencies ++= (if (sparkJarsDir.isDefined) Nil
                         else Seq("org.apache.spark" %% "spark-sql" % sys.props.getOrElse("spark.version", s"$sparkLine.0") % Provided))
Compile / unmanagedJars ++= sparkJarsDir.toSeq.flatMap(dir => (dir * "*.jar").get
  .filterNot(_.getName.matches("scala-(library|reflect|compiler)-.*")))

// treescore from Maven Central, or from the Maven repository -Dtreescore.repository names (this
// repository's ./dev/release writes one to target/release/maven).
resolvers ++= sys.props.get("treescore.repository").map(url => "treescore" at url).toSeq
libraryDependencies += "io.github.treescore" %% s"treescore-spark_$sparkLine" % sys.props.getOrElse("treescore.version", "0.1.0")

Compile / packageBin / artifactPath := target.value / "example-job.jar"
