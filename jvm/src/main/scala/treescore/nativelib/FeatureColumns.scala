package treescore.nativelib

import org.apache.spark.unsafe.Platform

/**
 * A batch's features as the native engines read them (native/src/rows/feature_batch.h, FeatureBatch):
 * per column the address of its value in row 0, consecutive rows `rowStride` doubles apart.
 * Owns only the native array of addresses. The memory they point into belongs to whoever set
 * them (a feature matrix, or a Spark column vector read in place), which keeps it valid while a
 * call reads it; the checks that every column holds `numRows` values are made here, on the JVM,
 * because native code sees bare addresses.
 */
final class FeatureColumns(val numColumns: Int) extends AutoCloseable {
  require(numColumns >= 0, s"numColumns must be non-negative, got $numColumns")
  private val addresses = new NativeBuffer(math.max(numColumns, 1).toLong * java.lang.Long.BYTES)
  private var stride: Long = 1
  private var rows: Int = 0
  private var matrixAddress: Long = 0

  def address: Long = addresses.address
  def rowStride: Long = stride
  def numRows: Int = rows

  /** Every column in `matrix`, row after row: numRows x numColumns doubles. */
  def setRowMajor(matrix: OffHeapDoubles, numRows: Int): Unit = {
    fits(matrix, numRows)
    var c = 0
    while (c < numColumns) { put(c, matrix.address + c.toLong * java.lang.Double.BYTES); c += 1 }
    stride = numColumns
    rows = numRows
  }

  /**
   * Every column in `matrix`, column after column (numRows doubles each), where a feature-major
   * writer puts them; [[setColumn]] may then point some columns elsewhere.
   */
  def setColumnMajor(matrix: OffHeapDoubles, numRows: Int): Unit = {
    fits(matrix, numRows)
    matrixAddress = matrix.address
    var c = 0
    while (c < numColumns) { put(c, columnInMatrix(c, numRows)); c += 1 }
    stride = 1
    rows = numRows
  }

  /** Column `c` read from `valuesAddress` instead of the matrix: numRows doubles side by side. */
  def setColumn(c: Int, valuesAddress: Long): Unit = {
    require(stride == 1 && c >= 0 && c < numColumns && valuesAddress != 0, s"column $c cannot be set here")
    put(c, valuesAddress)
  }

  /** The address column `c` has in the column-major matrix last set, as setColumnMajor set it. */
  def columnInMatrix(c: Int, numRows: Int): Long = matrixAddress + c.toLong * numRows * java.lang.Double.BYTES

  private def put(c: Int, value: Long): Unit = Platform.putLong(null, address + c.toLong * java.lang.Long.BYTES, value)

  private def fits(matrix: OffHeapDoubles, numRows: Int): Unit =
    if (numRows < 0 || numRows.toLong * numColumns > matrix.capacity) {
      throw new IllegalArgumentException(
        s"a batch of $numRows x $numColumns does not fit the ${matrix.capacity} doubles passed")
    }

  override def close(): Unit = addresses.close()
}

object FeatureColumns {
  /** The columns of a row-major matrix of numRows x numColumns doubles; the caller closes them. */
  def rowMajor(matrix: OffHeapDoubles, numRows: Int, numColumns: Int): FeatureColumns = {
    val columns = new FeatureColumns(numColumns)
    try columns.setRowMajor(matrix, numRows) catch { case e: Throwable => columns.close(); throw e }
    columns
  }
}
