package treescore.nativelib

import org.apache.spark.unsafe.Platform

/** Native memory holding int32 values (route indices, top-K groups and flags), handed to native code by address. */
final class OffHeapInts(val capacity: Long) extends AutoCloseable {
  require(capacity >= 0, s"capacity must be non-negative, got $capacity")
  private var addr: Long = NativeMethods.allocateBuffer(math.max(capacity, 1L) * Integer.BYTES)

  def address: Long = { if (addr == 0) throw new IllegalStateException("off-heap buffer already freed"); addr }
  def put(index: Long, value: Int): Unit = Platform.putInt(null, addr + index * Integer.BYTES, value)
  def get(index: Long): Int = Platform.getInt(null, addr + index * Integer.BYTES)

  override def close(): Unit = if (addr != 0) { NativeMethods.freeBuffer(addr); addr = 0 }
}
