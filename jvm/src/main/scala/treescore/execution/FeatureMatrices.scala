package treescore.execution

import scala.collection.mutable

import org.apache.spark.sql.catalyst.InternalRow
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
  // The batch last written. Batches are distinct Seq instances (BatchScoreExec groups rows into
  // fresh ones, a row-at-a-time scorer wraps each row anew), so a batch is written only once
  // however many calls ask for it.
  private var writtenFor: AnyRef = _

  /** Writes `batch`'s features unless they are written already. */
  def fill(batch: collection.Seq[InternalRow]): Unit = if (!(writtenFor eq batch)) {
    writtenFor = null // a failed write leaves nothing that looks written
    var i = 0
    val rows = batch.iterator
    while (rows.hasNext) {
      writer.write(rows.next(), values, i.toLong * numFeatures)
      i += 1
    }
    writtenFor = batch
    valuesWritten.foreach(_ += i.toLong * numFeatures)
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
