package treescore.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, BindReferences}
import org.apache.spark.sql.execution.metric.SQLMetric

import treescore.expressions.ScoreExpression
import treescore.model.{Engine, ModelCache, ModelLease, OffHeapDoubles, PredictKind}

/**
 * One task's state for a plain model call: a lease on the shared native model (in the engine
 * the plan chose), a writer that
 * puts a row's features into an off-heap matrix, the matrix and an output buffer, all sized
 * once for `batchRows` and reused for every batch. Built by [[ModelTaskScorer.open]], which
 * returns the lease and frees the buffers if any step fails.
 */
private[treescore] final class ModelTaskScorer private (lease: ModelLease, kind: PredictKind, writer: FeatureWriter,
    numFeatures: Int, matrix: OffHeapDoubles, outputs: OffHeapDoubles, output: ScoreOutput, nativeThreads: Int,
    metrics: Map[String, SQLMetric], owned: Owned) extends TaskScorer {

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
    metrics.get(TaskScorers.rowsMetric(lease.model.engine)).foreach(_ += batch.length)
  }

  override def result(i: Int): Any = output.value(outputs, i)

  override def close(): Unit = owned.close()
}

private[treescore] object ModelTaskScorer {
  def open(call: ScoreExpression, engine: Engine, inputSchema: Seq[Attribute], batchRows: Int, nativeThreads: Int,
      metrics: Map[String, SQLMetric]): ModelTaskScorer = Owned.building { owned =>
    val lease = owned(ModelCache.acquire(call.model, call.options.iterations, engine))
    metrics.get("modelLoadTime").foreach(_ += lease.loadNanos)
    val kind = call.options.predictKind
    val numFeatures = call.model.numFeatures
    val perRow = lease.model.outputsPerRow(kind)
    val writer = FeatureWriters(call.input, BindReferences.bindReferences(call.children, inputSchema), numFeatures)
    val matrix = owned(new OffHeapDoubles(batchRows.toLong * numFeatures))
    val outputs = owned(new OffHeapDoubles(batchRows.toLong * perRow))
    new ModelTaskScorer(lease, kind, writer, numFeatures, matrix, outputs, new ScoreOutput(call.dataType, perRow),
      nativeThreads, metrics, owned)
  }
}
