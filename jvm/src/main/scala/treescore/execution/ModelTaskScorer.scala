package treescore.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, BindReferences}
import org.apache.spark.sql.execution.metric.SQLMetric

import treescore.expressions.{ScoreExpression, ScoreOutput, TaskScorer}
import treescore.model.{ModelCache, OffHeapDoubles}

/**
 * One task's state for a plain model call: a lease on the shared native model, a writer that
 * puts a row's features into an off-heap matrix, the matrix and an output buffer, all sized
 * once for `batchRows` and reused for every batch.
 */
private[treescore] final class ModelTaskScorer(call: ScoreExpression, inputSchema: Seq[Attribute], batchRows: Int,
    nativeThreads: Int, metrics: Map[String, SQLMetric]) extends TaskScorer {

  private val lease = ModelCache.acquire(call.model, call.options.iterations)
  metrics.get("modelLoadTime").foreach(_ += lease.loadNanos)
  private val kind = call.options.predictKind
  private val numFeatures = call.model.numFeatures
  private val perRow = lease.model.outputsPerRow(kind)
  private val writer = call.input.writer(BindReferences.bindReferences(call.children, inputSchema), numFeatures)
  private val matrix = new OffHeapDoubles(batchRows.toLong * numFeatures)
  private val outputs = new OffHeapDoubles(batchRows.toLong * perRow)
  private val output = new ScoreOutput(call.dataType, perRow)

  override def score(batch: collection.Seq[InternalRow]): Unit = {
    var i = 0
    val rows = batch.iterator
    while (rows.hasNext) {
      writer.write(rows.next(), matrix, i.toLong * numFeatures)
      i += 1
    }
    val start = System.nanoTime()
    lease.model.predict(matrix, batch.length, kind, nativeThreads, outputs)
    metrics.get("nativeTime").foreach(_ += System.nanoTime() - start)
  }

  override def result(i: Int): Any = output.value(outputs, i)

  override def close(): Unit = {
    matrix.close()
    outputs.close()
    lease.close()
  }
}
