package treescore.nativelib

import org.apache.spark.unsafe.Platform

/** Native memory holding int32 values (route indices, top-K groups and flags), handed to native code by address. */
final class OffHeapInts(val capacity: Long) extends AutoCloseable {
  require(capacity >= 0, s"capacity must be non-negative, got $capacity")
  private val buffer = new NativeBuffer(math.max(capacity, 1L) * Integer.BYTES)

  def address: Long = buffer.address
  def put(index: Long, value: Int): Unit = Platform.putInt(null, buffer.unchecked + index * Integer.BYTES, value)
  def get(index: Long): Int = Platform.getInt(null, buffer.unchecked + index * Integer.BYTES)

  override def close(): Unit = buffer.close()
}
