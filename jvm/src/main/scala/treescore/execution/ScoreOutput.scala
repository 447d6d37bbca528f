package treescore.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData
import org.apache.spark.sql.types.{ArrayType, DataType, DoubleType, IntegerType}

import treescore.nativelib.OffHeapDoubles

/** Reads one row's native outputs (`perRow` doubles) as a Spark value of the score's type. */
final class ScoreOutput(dataType: DataType, perRow: Int) {
  private val read: (OffHeapDoubles, Long) => Any = dataType match {
    case DoubleType => (out, base) => out.get(base)
    case ArrayType(DoubleType, _) => (out, base) => out.arrayData(base, perRow)
    case ArrayType(IntegerType, _) => (out, base) => // leaf indices, which LightGBM returns as doubles
      val values = new Array[Int](perRow)
      var i = 0
      while (i < perRow) { values(i) = out.get(base + i).toInt; i += 1 }
      UnsafeArrayData.fromPrimitiveArray(values)
    case other => throw new IllegalStateException(s"no score output of type $other")
  }

  def value(out: OffHeapDoubles, row: Int): Any = read(out, row.toLong * perRow)

  /** Row `row`'s value as field `ordinal` of `into`; a double without boxing it. */
  def write(out: OffHeapDoubles, row: Int, into: InternalRow, ordinal: Int): Unit =
    if (dataType == DoubleType) into.setDouble(ordinal, out.get(row.toLong * perRow))
    else into.update(ordinal, value(out, row))
}
