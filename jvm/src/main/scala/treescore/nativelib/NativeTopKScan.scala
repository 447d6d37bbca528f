package treescore.nativelib

import java.util.concurrent.atomic.AtomicBoolean

import treescore.model.{Engine, PredictKind}

/**
 * The one owner of a native top-K scan (native/src/top_k/selector.h): one task's exact top-K
 * selection over a model loaded into treescore's engine or over an ensemble program, which
 * keeps each group's k best scores from batch to batch and holds the model or program until
 * close(), which releases it exactly once.
 */
final class NativeTopKScan private (handle: Long) extends AutoCloseable {
  private val closed = new AtomicBoolean(false)

  /**
   * Scores what selection needs of `features`' rows: kept(r) becomes 1 for each row that may be
   * in its group's top k, with its exact score in scores(r), and 0 for the others. Group numbers
   * are int32 per row, or None for one group; route indices (a program with routes) are
   * `routeSlots` int32 per row. `floor` (one group only, else -infinity) is a key that k rows
   * kept by other scans of the query reach. Returns how many rows were kept.
   */
  def select(features: FeatureColumns, groups: Option[OffHeapInts], routes: Option[OffHeapInts], routeSlots: Int,
      floor: Double, kept: OffHeapInts, scores: OffHeapDoubles): Int = {
    val capacity = math.min(kept.capacity, scores.capacity)
    require(groups.forall(_.capacity >= features.numRows), s"${features.numRows} rows, room for fewer group numbers")
    require(routes.forall(_.capacity >= features.numRows.toLong * routeSlots),
      s"${features.numRows} rows, room for fewer route indices")
    NativeMethods.selectTopK(handle, features.address, features.numColumns, features.rowStride, features.numRows,
      groups.map(_.address).getOrElse(0L), routes.map(_.address).getOrElse(0L), floor, kept.address, scores.address,
      capacity)
  }

  /** The best keys so far of a one-group scan (at most k), for the scans of other partitions. */
  def bestKeys: Array[Double] = NativeMethods.topKBestKeys(handle)

  /** Trees evaluated so far, and how many full scores of the same rows evaluate. */
  def treeCounts: (Long, Long) = {
    val counts = NativeMethods.topKTreeCounts(handle)
    (counts(0), counts(1))
  }

  override def close(): Unit = if (closed.compareAndSet(false, true)) NativeMethods.releaseTopK(handle)
}

object NativeTopKScan {
  /** Opens a scan over `model` (loaded into treescore's engine) ranking `kind` over the model's iteration range. */
  def open(model: NativeModel, kind: PredictKind, k: Int, descending: Boolean): NativeTopKScan = {
    require(model.engine == Engine.Treescore, s"top-K selection runs on treescore's engine, not ${model.engine}")
    new NativeTopKScan(NativeMethods.openTopK(model.handle, kind.code, model.range.startIteration,
      model.range.numIterations, k, descending))
  }

  /**
   * Opens a scan over a compiled ensemble or route whose parts are models on treescore's engine
   * and such ensembles and routes, with weights of 0 or more
   * ([[treescore.rules.InferTopKSelection]] plans only those), ranking its scores.
   */
  def open(program: NativeProgram, k: Int, descending: Boolean): NativeTopKScan =
    new NativeTopKScan(NativeMethods.openTopKProgram(program.handle, k, descending))
}
