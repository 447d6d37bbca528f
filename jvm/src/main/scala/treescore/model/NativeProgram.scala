package treescore.model

import java.util.concurrent.atomic.AtomicBoolean

import treescore.nativelib.NativeMethods

/**
 * The one owner of a compiled native program: an ensemble, route, cascade or grid over loaded
 * models (see native/src/program.h for the encoding). The program holds its models' native
 * handles until close(), which releases it exactly once.
 */
final class NativeProgram private (handle: Long) extends AutoCloseable {
  private val closed = new AtomicBoolean(false)

  /**
   * Evaluates `numRows` rows of inputs (row-major doubles) with their route indices (row-major
   * int32 per route slot, or None when the program has no routes) into one double per row.
   * `gridPoints` consecutive rows form one what-if grid, kept monotone as `monotoneCode` says
   * (1 running max, -1 running min, 0 none). Returns how many rows a cascade escalated.
   */
  def evaluate(inputs: OffHeapDoubles, numRows: Int, routes: Option[OffHeapInts], numThreads: Int, gridPoints: Int,
      monotoneCode: Int, out: OffHeapDoubles): Long =
    NativeMethods.evaluateProgram(handle, inputs.address, inputs.capacity, numRows,
      routes.map(_.address).getOrElse(0L), routes.map(_.capacity).getOrElse(0L), numThreads, gridPoints, monotoneCode,
      out.address, out.capacity)

  override def close(): Unit = if (closed.compareAndSet(false, true)) NativeMethods.releaseProgram(handle)
}

object NativeProgram {
  /** Compiles `code` and `constants` over `models`, which must stay loaded while it is compiled. */
  def compile(code: Array[Long], constants: Array[Double], models: Seq[NativeModel]): NativeProgram =
    new NativeProgram(NativeMethods.compileProgram(code, constants, models.map(_.handle).toArray))
}
