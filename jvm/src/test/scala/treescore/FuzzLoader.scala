package treescore

import java.io.File
import java.nio.charset.StandardCharsets
import java.nio.file.Files

import treescore.model.{Engine, IterationRange, PredictKind, TreeModel}
import treescore.nativelib.{FeatureColumns, NativeModel, OffHeapDoubles}

/**
 * Child-process half of ModelFuzzSuite: loads every model file in a folder into both engines,
 * LightGBM's and treescore's (through treescore's JNI), and scores a few rows with each, printing each file's name before
 * touching it, so that a native crash names the file that caused it.
 */
object FuzzLoader {
  def main(args: Array[String]): Unit = {
    val files = new File(args(0)).listFiles().filter(_.getName.endsWith(".txt")).sortBy(_.getName)
    for (file <- files) {
      val model = TreeModel.fromString(new String(Files.readAllBytes(file.toPath), StandardCharsets.UTF_8))
      // Every engine a query could load the model into.
      Engine.all.foreach(engine => load(file, model, engine))
    }
    println(s"done loaded=$loaded refused=$refused")
  }

  private var loaded = 0
  private var refused = 0

  private def load(file: File, model: TreeModel, engine: Engine): Unit = {
    println(s"loading ${file.getName} into the $engine engine")
    try {
      val native = NativeModel.load(model, IterationRange.All, engine)
      val rows = new OffHeapDoubles(64L * native.numFeatures)
      val out = new OffHeapDoubles(64L * native.outputsPerRow(PredictKind.Prediction))
      try {
        val rng = new scala.util.Random(file.getName.hashCode)
        (0 until 64 * native.numFeatures).foreach(i => rows.put(i, if (i % 7 == 0) Double.NaN else rng.nextGaussian() * 3))
        val columns = FeatureColumns.rowMajor(rows, 64, native.numFeatures)
        try native.predict(columns, PredictKind.Prediction, 1, out) finally columns.close()
        loaded += 1
      } finally { rows.close(); out.close(); native.close() }
    } catch {
      // LightGBM's refusals arrive as NativeException, the engine's as IllegalArgumentException.
      case e @ (_: treescore.nativelib.NativeException | _: IllegalArgumentException) =>
        refused += 1
        println(s"refused ${file.getName} in the $engine engine: ${e.getMessage}")
    }
  }
}
