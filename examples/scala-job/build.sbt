// A user's own Spark job that scores with treescore. Spark is provided by the cluster;
// treescore's jar (which carries its native libraries) is the only addition. Here the jar is
// taken from this repository's build; in your project, point `treescore.jar` at the jar the
// wheel ships (`python -c "import treescore; print(treescore.jar_path())"`).
scalaVersion := "2.13.16"

name := "treescore-example-job"

libraryDependencies += "org.apache.spark" %% "spark-sql" % sys.props.getOrElse("spark.version", "4.0.1") % Provided

Compile / unmanagedJars += file(sys.props.getOrElse("treescore.jar", "../../jvm/target/treescore.jar"))

Compile / packageBin / artifactPath := target.value / "example-job.jar"
