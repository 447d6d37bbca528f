package treescore.execution

import scala.collection.mutable

import org.apache.spark.sql.catalyst.expressions.{Attribute, BindReferences, Expression}
import org.apache.spark.sql.execution.metric.SQLMetric

import treescore.expressions.ScoreExpression
import treescore.model.OffHeapDoubles

/**
 * A batch's features as one row-major off-heap matrix, read by every model call of a task
 * that reads the same feature columns in the same order: three models over the same 200
 * columns share one matrix, written once per batch, instead of three copies.
 */
private[treescore] final class FeatureMatrix(writer: FeatureWriter, val numFeatures: Int, batchRows: Int,
    valuesWritten: Option[SQLMetric]) extends AutoCloseable {
  val values = new OffHeapDoubles(batchRows.toLong * numFeatures)
  // The batch last written. Every batch is a new InputBatch, so a batch is written only once
  // however many calls ask for it.
  private var writtenFor: InputBatch = _

  /** Writes `batch`'s features unless they are written already: column by column from a columnar batch. */
  def fill(batch: InputBatch): Unit = if (!(writtenFor eq batch)) {
    writtenFor = null // a failed write leaves nothing that looks written
    batch match {
      case slice: ColumnSlice => writer.writeColumns(slice, values, numFeatures)
      case _ =>
        var i = 0
        val rows = batch.rows
        while (rows.hasNext) {
          writer.write(rows.next(), values, i.toLong * numFeatures)
          i += 1
        }
    }
    writtenFor = batch
    valuesWritten.foreach(_ += batch.numRows.toLong * numFeatures)
  }

  override def close(): Unit = values.close()
}

/**
 * One task's feature matrices for a set of score calls, one per distinct feature list; closes
 * them all. `valuesWritten` counts the feature values written, however many calls read them.
 */
private[treescore] final class FeatureMatrices(inputSchema: Seq[Attribute], batchRows: Int,
    valuesWritten: Option[SQLMetric] = None) extends AutoCloseable {
  private val owned = new Owned
  private val byFeatures = mutable.HashMap.empty[(Seq[Expression], Int), FeatureMatrix]

  /** The matrix `call`'s model reads; calls with the same features (canonically) get the same one. */
  def forCall(call: ScoreExpression): FeatureMatrix = {
    val numFeatures = call.model.numFeatures
    byFeatures.getOrElseUpdate((call.children.map(_.canonicalized), numFeatures), {
      val writer = FeatureWriters(call.input, BindReferences.bindReferences(call.children, inputSchema), numFeatures)
      owned(new FeatureMatrix(writer, numFeatures, batchRows, valuesWritten))
    })
  }

  override def close(): Unit = owned.close()
}
