package treescore.nativelib

import org.apache.spark.sql.execution.treescore.TaskMemory

/**
 * `bytes` of off-heap memory allocated by the native library, whose account counts them
 * ([[NativeMemory]]), and, where Spark manages off-heap execution memory, granted by the running
 * task's memory manager first ([[TaskMemory]]). The one owner of both: close() frees them once.
 */
private[nativelib] final class NativeBuffer(val bytes: Long) extends AutoCloseable {
  require(bytes >= 0, s"a buffer of $bytes bytes")
  private val grant = TaskMemory.acquire(bytes)
  private var addr: Long = try NativeMethods.allocateBuffer(bytes) catch { case e: Throwable => grant.close(); throw e }

  /** The buffer's address; throws once freed. */
  def address: Long = { if (addr == 0) throw new IllegalStateException("off-heap buffer already freed"); addr }

  /** The address without the check, for accessors on hot paths that hold it valid. */
  def unchecked: Long = addr

  override def close(): Unit = if (addr != 0) {
    NativeMethods.freeBuffer(addr)
    addr = 0
    grant.close()
  }
}
