package treescore.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, BindReferences}
import org.apache.spark.sql.execution.metric.SQLMetric

import treescore.expressions.{ScoreExpression, ScoreOutput}
import treescore.model.{ModelCache, OffHeapDoubles}

/**
 * One task's scoring state. Per score call: a lease on its shared native model, a writer that
 * puts a row's features into an off-heap matrix, the matrix and an output buffer, all sized
 * once for `batchRows` rows and reused for every batch. close() frees the buffers and returns
 * the leases.
 */
private[execution] final class BatchScorer(
    scores: Seq[ScoreExpression],
    inputSchema: Seq[Attribute],
    batchRows: Int,
    nativeThreads: Int,
    metrics: Map[String, SQLMetric]) extends AutoCloseable {

  private final class Call(score: ScoreExpression) extends AutoCloseable {
    val lease = ModelCache.acquire(score.model, score.options.iterations)
    metrics("modelLoadTime") += lease.loadNanos
    private val kind = score.options.predictKind
    private val numFeatures = score.model.numFeatures
    private val perRow = lease.model.outputsPerRow(kind)
    private val writer = score.input.writer(BindReferences.bindReferences(score.children, inputSchema), numFeatures)
    private val matrix = new OffHeapDoubles(batchRows.toLong * numFeatures)
    private val outputs = new OffHeapDoubles(batchRows.toLong * perRow)
    private val output = new ScoreOutput(score.dataType, perRow)

    def score(batch: collection.Seq[InternalRow]): Unit = {
      var i = 0
      val rows = batch.iterator
      while (rows.hasNext) {
        writer.write(rows.next(), matrix, i.toLong * numFeatures)
        i += 1
      }
      val start = System.nanoTime()
      lease.model.predict(matrix, batch.length, kind, nativeThreads, outputs)
      metrics("nativeTime") += System.nanoTime() - start
    }

    def result(i: Int): Any = output.value(outputs, i)

    override def close(): Unit = {
      matrix.close()
      outputs.close()
      lease.close()
    }
  }

  private val calls: IndexedSeq[Call] = {
    val opened = IndexedSeq.newBuilder[Call]
    try scores.foreach(s => opened += new Call(s))
    catch { case e: Throwable => opened.result().foreach(_.close()); throw e }
    opened.result()
  }

  /** Scores a batch of at most batchRows rows with every call: one native call each. */
  def score(batch: collection.Seq[InternalRow]): Unit = {
    require(batch.length <= batchRows, s"batch of ${batch.length} rows exceeds $batchRows")
    calls.foreach(_.score(batch))
    metrics("numBatches") += 1
  }

  /** Score call k's result for row i of the last batch. */
  def result(k: Int, i: Int): Any = calls(k).result(i)

  override def close(): Unit = calls.foreach(_.close())
}
