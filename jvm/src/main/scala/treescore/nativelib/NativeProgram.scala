package treescore.nativelib

import java.util.concurrent.atomic.AtomicBoolean

/**
 * The one owner of a compiled native program: an ensemble, route, cascade or grid over loaded
 * models (see native/src/program/program_decoder.h for the encoding). The program holds its models' native
 * handles until close(), which releases it exactly once.
 */
final class NativeProgram private (private[nativelib] val handle: Long) extends AutoCloseable {
  private val closed = new AtomicBoolean(false)

  /**
   * Evaluates `numRows` rows into one double per row. Every `gridPoints` consecutive rows are
   * one base row's what-if grid (1 without a grid): `inputs` (one column per program input)
   * hold the numRows / gridPoints base rows, and the inputs listed in `gridInputs` take each point's
   * value from `gridValues` (numRows x gridInputs.length). Route indices are row-major int32
   * per route slot, or None when the program has no routes. A monotone curve (`monotoneCode`
   * 1 running max, -1 running min, 0 none) runs along each run of `monotoneRun` points.
   * With `contributions`, each row gets its SHAP values instead: inputs.numColumns + 1 doubles
   * (native/src/program/program.h, Program::EvaluateContributions). Returns how many rows a cascade escalated.
   */
  def evaluate(inputs: FeatureColumns, numRows: Int, routes: Option[OffHeapInts], numThreads: Int, gridPoints: Int,
      gridInputs: Array[Int], gridValues: OffHeapDoubles, monotoneCode: Int, monotoneRun: Int,
      contributions: Boolean, out: OffHeapDoubles): Long = {
    require(numRows / gridPoints <= inputs.numRows, s"${numRows / gridPoints} base rows, ${inputs.numRows} in the inputs")
    NativeMethods.evaluateProgram(handle, inputs.address, inputs.numColumns, inputs.rowStride, numRows,
      routes.map(_.address).getOrElse(0L), routes.map(_.capacity).getOrElse(0L), numThreads, gridPoints, gridInputs,
      gridValues.address, gridValues.capacity, monotoneCode, monotoneRun, contributions, out.address, out.capacity)
  }

  override def close(): Unit = if (closed.compareAndSet(false, true)) NativeMethods.releaseProgram(handle)
}

object NativeProgram {
  /** Compiles `code` and `constants` over `models`, which must stay loaded while it is compiled. */
  def compile(code: Array[Long], constants: Array[Double], models: Seq[NativeModel]): NativeProgram =
    new NativeProgram(NativeMethods.compileProgram(code, constants, models.map(_.handle).toArray))
}
