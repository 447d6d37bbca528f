package treescore.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, BindReferences, MutableProjection}
import org.apache.spark.sql.execution.metric.SQLMetric

import treescore.expressions.ScoreExpression
import treescore.model.{ModelCache, NativeModel, OffHeapDoubles, PredictKind}

/**
 * One task's scoring state: per score call, its shared native model, a projection that reads
 * the features of a row as doubles, an off-heap feature matrix and an off-heap output buffer,
 * all sized once for `batchRows` and reused for every batch. close() frees the buffers; the
 * models belong to [[ModelCache]].
 */
private[execution] final class BatchScorer(
    scores: Seq[ScoreExpression],
    inputSchema: Seq[Attribute],
    batchRows: Int,
    nativeThreads: Int,
    metrics: Map[String, SQLMetric]) extends AutoCloseable {

  private val kind = PredictKind.Prediction

  private val models: IndexedSeq[NativeModel] = scores.toIndexedSeq.map { s =>
    val (native, loadNanos) = ModelCache.get(s.model)
    metrics("modelLoadTime") += loadNanos
    native
  }

  private val featureReaders: IndexedSeq[MutableProjection] = scores.toIndexedSeq.map { s =>
    MutableProjection.create(BindReferences.bindReferences(s.featuresAsDoubles, inputSchema))
  }

  private val matrices = scores.toIndexedSeq.map(s => new OffHeapDoubles(batchRows.toLong * s.children.length))
  private val outputs = models.map(m => new OffHeapDoubles(batchRows.toLong * m.outputsPerRow(kind)))

  /** Scores a batch of at most batchRows rows with every model: one native call per model. */
  def score(batch: collection.Seq[InternalRow]): Unit = {
    require(batch.length <= batchRows, s"batch of ${batch.length} rows exceeds $batchRows")
    var k = 0
    while (k < models.length) {
      fill(featureReaders(k), matrices(k), models(k).numFeatures, batch)
      val start = System.nanoTime()
      models(k).predict(matrices(k), batch.length, kind, nativeThreads, outputs(k))
      metrics("nativeTime") += System.nanoTime() - start
      k += 1
    }
    metrics("numBatches") += 1
  }

  /** Score call k's result for row i of the last batch. */
  def result(k: Int, i: Int): Double = outputs(k).get(i)

  private def fill(read: MutableProjection, matrix: OffHeapDoubles, numFeatures: Int,
      batch: collection.Seq[InternalRow]): Unit = {
    var i = 0
    val rows = batch.iterator
    while (rows.hasNext) {
      val features = read(rows.next())
      val base = i.toLong * numFeatures
      var j = 0
      while (j < numFeatures) {
        matrix.put(base + j, if (features.isNullAt(j)) Double.NaN else features.getDouble(j))
        j += 1
      }
      i += 1
    }
  }

  override def close(): Unit = (matrices ++ outputs).foreach(_.close())
}
