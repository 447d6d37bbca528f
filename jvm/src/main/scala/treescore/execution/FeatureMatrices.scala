package treescore.execution

import scala.collection.mutable

import org.apache.spark.sql.catalyst.expressions.{Attribute, BindReferences, Expression}
import org.apache.spark.sql.execution.metric.SQLMetric

import treescore.expressions.ScoreExpression
import treescore.nativelib.{FeatureColumns, OffHeapDoubles}

/**
 * A batch's features as the engines read them ([[FeatureColumns]]), shared by every model call
 * of a task that reads the same feature columns in the same order: three models over the same
 * 200 columns read one matrix, written once per batch, instead of three copies. Rows are written
 * row after row into the off-heap matrix; a columnar slice is written column by column, and a
 * column whose values already sit in native memory is read in place, not copied.
 */
private[treescore] final class FeatureMatrix(writer: FeatureWriter, val numFeatures: Int, batchRows: Int,
    valuesWritten: Option[SQLMetric], valuesInPlace: Option[SQLMetric]) extends AutoCloseable {
  private val owned = new Owned
  val values: OffHeapDoubles = owned(new OffHeapDoubles(batchRows.toLong * numFeatures))
  val columns: FeatureColumns = try owned(new FeatureColumns(numFeatures)) catch {
    case e: Throwable => owned.close(); throw e
  }
  // The batch last written. Every batch is a new InputBatch, so a batch is written only once
  // however many calls ask for it.
  private var writtenFor: InputBatch = _
  private var readInPlace = 0
  private var unread = 0
  // batchRows NaNs: the column of every feature no tree reads, allocated by the first such feature.
  private var missing: OffHeapDoubles = _

  /** Writes `batch`'s features unless they are written already. */
  def fill(batch: InputBatch): Unit = if (!(writtenFor eq batch)) {
    writtenFor = null // a failed write leaves nothing that looks written
    readInPlace = 0
    unread = 0
    batch match {
      case slice: ColumnSlice =>
        columns.setColumnMajor(values, slice.numRows)
        writer.writeColumns(slice, this)
      case _ =>
        columns.setRowMajor(values, batch.numRows)
        var i = 0
        val rows = batch.rows
        while (rows.hasNext) {
          writer.write(rows.next(), values, i.toLong * numFeatures, 1)
          i += 1
        }
    }
    writtenFor = batch
    valuesWritten.foreach(_ += (batch.numRows.toLong * (numFeatures - readInPlace - unread)))
    valuesInPlace.foreach(_ += batch.numRows.toLong * readInPlace)
  }

  /** Where a columnar write puts feature `position`: its column in the matrix, an index into `values`. */
  private[execution] def columnStart(position: Int, numRows: Int): Long = position.toLong * numRows

  /** Feature `position` is read in place from `address` (numRows doubles side by side), not written. */
  private[execution] def readFrom(position: Int, address: Long): Unit = {
    columns.setColumn(position, address)
    readInPlace += 1
  }

  /** Feature `position` is read by no tree: it reads as missing (NaN), and nothing is written. */
  private[execution] def readMissing(position: Int): Unit = {
    if (missing == null) {
      missing = owned(new OffHeapDoubles(batchRows.toLong))
      var r = 0L
      while (r < batchRows) { missing.put(r, Double.NaN); r += 1 }
    }
    columns.setColumn(position, missing.address)
    unread += 1
  }

  override def close(): Unit = owned.close()
}

/**
 * One task's feature matrices for a set of score calls, one per distinct feature list; closes
 * them all. The metrics count the feature values written, and those read in place, however
 * many calls read them.
 */
private[treescore] final class FeatureMatrices(inputSchema: Seq[Attribute], batchRows: Int,
    valuesWritten: Option[SQLMetric] = None, valuesInPlace: Option[SQLMetric] = None) extends AutoCloseable {
  private val owned = new Owned
  private val byFeatures = mutable.HashMap.empty[Any, FeatureMatrix]

  /** The matrix `call`'s model reads; calls with the same features (canonically) get the same one. */
  def forCall(call: ScoreExpression): FeatureMatrix = {
    val numFeatures = call.model.numFeatures
    byFeatures.getOrElseUpdate(call.sharedFeatures.get._1, {
      val writer = FeatureWriters(call.input, BindReferences.bindReferences(call.children, inputSchema), numFeatures)
      owned(new FeatureMatrix(writer, numFeatures, batchRows, valuesWritten, valuesInPlace))
    })
  }

  override def close(): Unit = owned.close()
}
