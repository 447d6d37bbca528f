package treescore.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, MutableProjection}

import treescore.ensemble.RouteSlot
import treescore.nativelib.OffHeapInts

/**
 * A program's route indices, as the native program and top-K scan read them: per row, for each
 * of `slots`, the index of the scorer its key picks (-1 where it picks none: the row scores
 * null), into `indices`, which the caller owns. `keys` are the call's key inputs, bound to the
 * input rows.
 */
private[execution] final class RouteIndices(keys: Seq[Expression], slots: Seq[RouteSlot], val indices: OffHeapInts) {
  private val keyRow = MutableProjection.create(keys)
  private val keyTypes = keys.map(_.dataType)
  val numSlots: Int = slots.length

  /** The row's indices for positions `at` to `at + repeat - 1` (a grid's points each repeat their row's). */
  def write(row: InternalRow, at: Long, repeat: Int = 1): Unit = {
    val key = keyRow(row)
    var s = 0
    while (s < numSlots) {
      val slot = slots(s)
      val name = if (key.isNullAt(slot.keyInput)) "null" else key.get(slot.keyInput, keyTypes(slot.keyInput)).toString
      val index = slot.routeIndex(name)
      var k = 0
      while (k < repeat) { indices.put((at + k) * numSlots + s, index); k += 1 }
      s += 1
    }
  }
}
