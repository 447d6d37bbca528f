package treescore.nativelib

import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData
import org.apache.spark.unsafe.Platform

/**
 * A block of native memory holding doubles, handed to the native scorer by address.
 * Off-heap so that one JNI call reads a whole batch without copying or pinning Java arrays;
 * a [[NativeBuffer]], which the native memory account (and Spark, where it manages off-heap
 * execution memory) counts.
 * Its owner must call close(); BatchScoreExec does so when its task completes.
 */
final class OffHeapDoubles(val capacity: Long) extends AutoCloseable {
  require(capacity >= 0, s"capacity must be non-negative, got $capacity")
  private val buffer = new NativeBuffer(math.max(capacity, 1L) * java.lang.Double.BYTES)

  def address: Long = buffer.address

  def put(index: Long, value: Double): Unit = Platform.putDouble(null, buffer.unchecked + index * java.lang.Double.BYTES, value)

  def get(index: Long): Double = Platform.getDouble(null, buffer.unchecked + index * java.lang.Double.BYTES)

  /**
   * Doubles [from, from + count) as a Spark array<double>: one copy into the array's own
   * buffer, no boxing. Contributions are num_features + 1 doubles per row per class.
   */
  def arrayData(from: Long, count: Int): UnsafeArrayData = {
    require(from >= 0 && from + count <= capacity, s"doubles [$from, ${from + count}) are outside 0..$capacity")
    val array = UnsafeArrayData.createFreshArray(count, java.lang.Double.BYTES)
    Platform.copyMemory(null, address + from * java.lang.Double.BYTES, array.getBaseObject,
      array.getBaseOffset + UnsafeArrayData.calculateHeaderPortionInBytes(count), count.toLong * java.lang.Double.BYTES)
    array
  }

  override def close(): Unit = buffer.close()
}
