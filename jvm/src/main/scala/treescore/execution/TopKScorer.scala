package treescore.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, BindReferences, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.metric.SQLMetric

import treescore.expressions.{BatchableScore, ProgramScoreExpression, ScoreExpression}
import treescore.model.{Engine, PredictKind}
import treescore.nativelib.{ModelCache, NativeTopKScan, OffHeapDoubles, OffHeapInts}
import treescore.rules.TopKSelection

/**
 * One task's exact top-K selection for one call ([[TopKSelection]]) of a model or of a weighted
 * ensemble or route of models: leases on the models in treescore's engine (and the compiled
 * program), the call's feature matrix, the native scan (which keeps each group's k
 * best scores from batch to batch, so the bar rises over the whole partition), and buffers for
 * group numbers, route indices, kept flags and scores, sized once for `batchRows`. Built by
 * [[TopKScorer.open]], which releases what it acquired if a step fails. `nullable`: a NaN score
 * is a route's null.
 */
private[execution] final class TopKScorer private (scan: NativeTopKScan, features: FeatureMatrix,
    groups: Option[GroupNumbers], routes: Option[RouteIndices], nullable: Boolean, kept: OffHeapInts,
    scores: OffHeapDoubles, metrics: Map[String, SQLMetric], owned: Owned) extends AutoCloseable {
  private var reportedTrees = (0L, 0L)

  /**
   * The batch's rows that may be in their group's top k, in order; score(i) is row i's score.
   * `floor` (one group only): a key k rows kept by other partitions reach.
   */
  def select(batch: InputBatch, floor: Double): Array[Int] = {
    val written = System.nanoTime()
    features.fill(batch)
    groups.foreach(_.write(batch))
    routes.foreach { r =>
      val rows = batch.rows
      var i = 0L
      while (rows.hasNext) { r.write(rows.next(), i); i += 1 }
    }
    val start = System.nanoTime()
    metrics.get("featureWriteTime").foreach(_ += start - written)
    val count = scan.select(features.columns, groups.map(_.numbers), routes.map(_.indices),
      routes.map(_.numSlots).getOrElse(0), floor, kept, scores)
    metrics.get("nativeTime").foreach(_ += System.nanoTime() - start)
    metrics.get(TaskScorers.rowsMetric(Engine.Treescore)).foreach(_ += batch.numRows)
    metrics.get("topKRowsDropped").foreach(_ += batch.numRows - count)
    val selected = new Array[Int](count)
    var next = 0
    var i = 0
    while (next < count) {
      if (kept.get(i) == 1) { selected(next) = i; next += 1 }
      i += 1
    }
    reportTrees()
    selected
  }

  /** Row i's score: a Double, or null where a route picks no scorer for it. */
  def score(i: Int): Any = {
    val s = scores.get(i)
    if (s.isNaN && nullable) null else s
  }

  /** The best keys so far (one group): what this partition offers the others once it is done. */
  def bestKeys: Array[Double] = scan.bestKeys

  private def reportTrees(): Unit = {
    val counts = scan.treeCounts
    metrics.get("topKTreesEvaluated").foreach(_ += counts._1 - reportedTrees._1)
    metrics.get("topKTreesInFull").foreach(_ += counts._2 - reportedTrees._2)
    reportedTrees = counts
  }

  override def close(): Unit = owned.close()
}

private[treescore] object TopKScorer {
  /**
   * Doubles per batch row that a selection of `call` holds beyond the call's own buffers, which
   * bound the batch's rows with them (spark.treescore.batch.maxBytes): its group numbers, kept
   * flags and scores, and the native scan's working memory for the batch
   * (native/src/top_k/batch_selection.h): four candidate lists of 24 bytes a row, each member's
   * running sum, route needs and rest-bound bins (at most one 2-byte bin per feature), a few
   * per-row scratch words, and the compacted survivors' features.
   */
  def doublesPerRow(call: BatchableScore): Long = call match {
    case model: ScoreExpression => doublesPerRow(model.model.numFeatures, 1)
    case program: ProgramScoreExpression => doublesPerRow(program.featureInputs.length, program.models.length)
    case _ => 0L
  }

  /** The same for a call of `members` models reading `width` features. */
  def doublesPerRow(width: Long, members: Long): Long = {
    val ownBuffers = 3L
    val candidates = 4L * 3
    val perMember = 2L + (width + 3) / 4
    val scratch = 5L
    ownBuffers + candidates + members * perMember + scratch + width
  }

  private[execution] def open(call: BatchableScore, selection: TopKSelection, inputSchema: Seq[Attribute], batchRows: Int,
      metrics: Map[String, SQLMetric]): TopKScorer = Owned.building { owned =>
    val (scan, features, routes) = call match {
      case model: ScoreExpression =>
        val lease = owned(ModelCache.acquire(model.model, model.options.iterations, Engine.Treescore,
          PredictKind.Raw))
        metrics.get("modelLoadTime").foreach(_ += lease.loadNanos)
        val matrices = owned(new FeatureMatrices(inputSchema, batchRows, metrics.get("featureValuesWritten"),
          metrics.get("featureValuesInPlace")))
        (owned(NativeTopKScan.open(lease.model, model.options.predictKind, selection.k, selection.descending)),
          matrices.forCall(model), None)
      case ensemble: ProgramScoreExpression =>
        val (encoded, program) = ProgramTaskScorer.compile(ensemble, Engine.Treescore, metrics, owned)
        val bound = BindReferences.bindReferences(ensemble.children, inputSchema)
        val inputs = bound.take(ensemble.featureInputs.length)
        val routes = if (encoded.routeSlots.isEmpty) None
          else Some(new RouteIndices(bound.drop(inputs.length), encoded.routeSlots,
            owned(new OffHeapInts(batchRows.toLong * encoded.routeSlots.length))))
        (owned(NativeTopKScan.open(program, selection.k, selection.descending)),
          owned(new FeatureMatrix(FeatureWriters.scalarColumnsAt(inputs, Array.range(0, inputs.length)), inputs.length,
            batchRows, metrics.get("featureValuesWritten"), metrics.get("featureValuesInPlace"))), routes)
      case other => throw new IllegalArgumentException(s"treescore: top-K selection cannot rank $other")
    }
    val groups = if (selection.groupBy.isEmpty) None
      else Some(new GroupNumbers(selection, inputSchema, owned(new OffHeapInts(batchRows))))
    val nullable = call match {
      case p: ProgramScoreExpression => p.scorer.nullable
      case _ => false
    }
    new TopKScorer(scan, features, groups, routes, nullable, owned(new OffHeapInts(batchRows)),
      owned(new OffHeapDoubles(batchRows)), metrics, owned)
  }
}

/**
 * Numbers the distinct values of a selection's group keys in one task (0, 1, 2, ... as they first
 * appear) and writes each batch's row numbers into `numbers`, which the caller owns.
 */
private[execution] final class GroupNumbers(selection: TopKSelection, inputSchema: Seq[Attribute],
    val numbers: OffHeapInts) {
  private val keyOf = UnsafeProjection.create(BindReferences.bindReferences(selection.groupBy, inputSchema))
  private val known = new java.util.HashMap[UnsafeRow, Integer]

  /** Row i's group number into numbers(i), for each row of the batch. */
  def write(batch: InputBatch): Unit = {
    val rows = batch.rows
    var i = 0
    while (rows.hasNext) { numbers.put(i, of(rows.next())); i += 1 }
  }

  private def of(row: InternalRow): Int = {
    val key = keyOf(row)
    val number = known.get(key)
    if (number != null) number
    else {
      val next = known.size
      known.put(key.copy(), next)
      next
    }
  }
}
