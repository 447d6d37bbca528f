package treescore.execution

import scala.util.Try

import org.apache.arrow.vector.Float8Vector
import org.apache.spark.sql.execution.vectorized.{OffHeapColumnVector, OnHeapColumnVector}
import org.apache.spark.sql.vectorized.{ArrowColumnVector, ColumnVector}
import org.apache.spark.unsafe.Platform

import treescore.nativelib.OffHeapDoubles

/**
 * How a double column of a Spark columnar batch reaches a feature matrix with the fewest
 * copies: in place where its values already sit in native memory as doubles (an off-heap
 * vector, an Arrow vector), in one bulk copy where they sit in a Java array (an on-heap
 * vector), and value by value otherwise (dictionary-encoded Parquet pages, ORC's vectors).
 * A null is NaN, LightGBM's missing value, whichever way.
 */
private[execution] object ColumnVectors {

  /**
   * The address of row `first`'s value in a double column whose values can be read in place,
   * or 0: native memory, no nulls (their slots hold no NaN) and no dictionary (its slots hold
   * codes, not values).
   */
  def doublesInPlace(column: ColumnVector, first: Int): Long = column match {
    case v: OffHeapColumnVector if !v.hasDictionary && !v.hasNull => v.valuesNativeAddress() + first.toLong * 8
    case a: ArrowColumnVector if !a.hasNull => a.getValueVector match {
      case values: Float8Vector => values.getDataBufferAddress + first.toLong * 8
      case _ => 0L
    }
    case _ => 0L
  }

  // OnHeapColumnVector keeps its doubles in a private array; read through the field, one
  // System-level copy fills a matrix column, where the public getDoubles would allocate a copy
  // of its own per column and batch. Absent the field (a Spark that renamed it), values are
  // read one by one.
  private val onHeapDoubles: Option[java.lang.reflect.Field] = Try {
    val field = classOf[OnHeapColumnVector].getDeclaredField("doubleData")
    field.setAccessible(true)
    field
  }.toOption

  /** Copies rows [first, first + count) of a double column to to(at ...), nulls as NaN. */
  def copyDoubles(column: ColumnVector, first: Int, count: Int, to: OffHeapDoubles, at: Long): Unit = {
    val array = column match {
      case v: OnHeapColumnVector if !v.hasDictionary => onHeapDoubles.map(_.get(v).asInstanceOf[Array[Double]]).orNull
      case _ => null
    }
    if (array != null) {
      Platform.copyMemory(array, Platform.DOUBLE_ARRAY_OFFSET + first.toLong * 8, null, to.address + at * 8,
        count.toLong * 8)
      if (column.hasNull) {
        var r = 0
        while (r < count) { if (column.isNullAt(first + r)) to.put(at + r, Double.NaN); r += 1 }
      }
    } else {
      val nullable = column.hasNull
      var r = 0
      while (r < count) {
        to.put(at + r, if (nullable && column.isNullAt(first + r)) Double.NaN else column.getDouble(first + r))
        r += 1
      }
    }
  }
}
