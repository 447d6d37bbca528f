package treescore.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.metric.SQLMetric

import treescore.expressions.ScoreExpression
import treescore.model.{Engine, PredictKind}
import treescore.nativelib.{ModelCache, ModelLease, OffHeapDoubles}

/**
 * One task's state for a plain model call: a lease on the shared native model (in the engine
 * the plan chose), the batch's feature matrix (shared with the task's other calls that read the
 * same features) and an output buffer sized once for `batchRows` and reused for every batch.
 * Built by [[ModelTaskScorer.open]], which returns the lease and frees the buffer if any step fails.
 */
private[treescore] final class ModelTaskScorer private (lease: ModelLease, kind: PredictKind, features: FeatureMatrix,
    outputs: OffHeapDoubles, output: ScoreOutput, nativeThreads: Int, metrics: Map[String, SQLMetric], owned: Owned)
  extends TaskScorer {

  override def score(batch: InputBatch): Unit = {
    val written = System.nanoTime()
    features.fill(batch)
    val start = System.nanoTime()
    metrics.get("featureWriteTime").foreach(_ += start - written)
    lease.model.predict(features.columns, kind, nativeThreads, outputs)
    metrics.get("nativeTime").foreach(_ += System.nanoTime() - start)
    metrics.get(TaskScorers.rowsMetric(lease.model.engine)).foreach(_ += batch.numRows)
  }

  override def result(i: Int): Any = output.value(outputs, i)
  override def writeResult(i: Int, into: InternalRow, ordinal: Int): Unit = output.write(outputs, i, into, ordinal)

  override def close(): Unit = owned.close()
}

private[treescore] object ModelTaskScorer {
  /** `matrices` holds the feature matrix this call reads; it belongs to the caller, which closes it after this. */
  def open(call: ScoreExpression, engine: Engine, matrices: FeatureMatrices, batchRows: Int, nativeThreads: Int,
      metrics: Map[String, SQLMetric]): ModelTaskScorer = Owned.building { owned =>
    val kind = call.options.predictKind
    val lease = owned(ModelCache.acquire(call.model, call.options.iterations, engine, kind))
    metrics.get("modelLoadTime").foreach(_ += lease.loadNanos)
    val perRow = lease.model.outputsPerRow(kind)
    val features = matrices.forCall(call)
    val outputs = owned(new OffHeapDoubles(batchRows.toLong * perRow))
    new ModelTaskScorer(lease, kind, features, outputs, new ScoreOutput(call.dataType, perRow), nativeThreads, metrics,
      owned)
  }
}
