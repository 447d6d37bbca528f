package treescore.nativelib

import org.apache.spark.unsafe.Platform

/**
 * A block of native memory holding doubles, handed to the native scorer by address.
 * Off-heap so that one JNI call reads a whole batch without copying or pinning Java arrays.
 * Its owner must call close(); BatchScoreExec does so when its task completes.
 */
final class OffHeapDoubles(val capacity: Long) extends AutoCloseable {
  require(capacity >= 0, s"capacity must be non-negative, got $capacity")
  private var addr: Long = Platform.allocateMemory(math.max(capacity, 1L) * java.lang.Double.BYTES)

  def address: Long = { check(); addr }

  def put(index: Long, value: Double): Unit = Platform.putDouble(null, addr + index * java.lang.Double.BYTES, value)

  def get(index: Long): Double = Platform.getDouble(null, addr + index * java.lang.Double.BYTES)

  override def close(): Unit = if (addr != 0) {
    Platform.freeMemory(addr)
    addr = 0
  }

  private def check(): Unit = if (addr == 0) throw new IllegalStateException("off-heap buffer already freed")
}
