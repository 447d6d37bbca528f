// treescore's JVM side. The sbt project lives in jvm/; native code is built by CMake (native/)
// and packed into the jar under treescore/native/<os>/<arch>/, so the jar is self-contained.
import scala.sys.process._

// Spark 4.0.1 is the newest 4.0 release whose spark-mllib Maven Central serves here; CI also
// runs the Scala tests against the newest 4.x that resolves (dev/test: -Dspark.version=4.2.0).
val defaultSparkVersion = "4.0.1"
val sparkVersion = sys.props.getOrElse("spark.version", defaultSparkVersion)

// The platform folder inside the jar; NativeLoader derives the same name at run time.
def platformFolder: String = {
  val os = sys.props("os.name").toLowerCase match {
    case n if n.contains("linux") => "linux"
    case n if n.contains("mac")   => "darwin"
    case n                        => n.replaceAll("\\W+", "")
  }
  val arch = sys.props("os.arch") match {
    case "amd64" | "x86_64"  => "x86_64"
    case "aarch64" | "arm64" => "aarch64"
    case other               => other
  }
  s"$os/$arch"
}

lazy val buildNative = taskKey[Seq[File]]("Builds the JNI library with CMake and stages it as jar resources")

lazy val treescore = (project in file("jvm"))
  .settings(
    name := "treescore",
    organization := "io.treescore",
    version := "0.1.0",
    scalaVersion := "2.13.16",
    // A build against another Spark keeps its own outputs, so it never clobbers the shipped jar.
    target := baseDirectory.value / (if (sparkVersion == defaultSparkVersion) "target" else s"target-spark-$sparkVersion"),
    javacOptions ++= Seq("--release", "17"),
    scalacOptions ++= Seq("-deprecation", "-feature", "-release", "17"),
    libraryDependencies ++= Seq(
      "org.apache.spark" %% "spark-sql" % sparkVersion % Provided,
      "org.apache.spark" %% "spark-mllib" % sparkVersion % Provided,
      // Reads MLflow's MLmodel YAML. Spark's distribution ships it (Spark 4.2's catalyst depends
      // on it; 4.0's jars have it for Kubernetes); the version is 4.0.1's Jackson, evicted upward.
      "com.fasterxml.jackson.dataformat" % "jackson-dataformat-yaml" % "2.18.2" % Provided,
      "org.scalatest" %% "scalatest" % "3.2.19" % Test
    ),
    buildNative := {
      val log = streams.value.log
      val root = (ThisBuild / baseDirectory).value
      val buildDir = target.value / "native-build"
      val staged = (Compile / resourceManaged).value / "treescore" / "native" / platformFolder
      def run(cmd: Seq[String]): Unit = {
        log.info(cmd.mkString("$ ", " ", ""))
        if (Process(cmd, root).! != 0) sys.error(s"native build failed: ${cmd.mkString(" ")}")
      }
      run(Seq("cmake", "-S", "native", "-B", buildDir.getPath, "-DTREESCORE_BUILD_JNI=ON", "-DCMAKE_BUILD_TYPE=Release"))
      run(Seq("cmake", "--build", buildDir.getPath, "--parallel"))
      IO.delete(staged)
      run(Seq("cmake", "--install", buildDir.getPath, "--component", "jni", "--prefix", staged.getPath))
      (staged ** "*.so*").get ++ (staged ** "*.dylib").get
    },
    Compile / resourceGenerators += buildNative.taskValue,
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
    // The jar published for Spark: our classes plus the native libraries, nothing else.
    Compile / packageBin / artifactPath := target.value / "treescore.jar"
  )

lazy val root = (project in file("."))
  .aggregate(treescore)
  .settings(publish / skip := true)
