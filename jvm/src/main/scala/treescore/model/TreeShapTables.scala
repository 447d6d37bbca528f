package treescore.model

import scala.collection.mutable

import treescore.wire.WireLimits

/**
 * What treescore's TreeSHAP (native/src/engine/tree_shap.h) would keep for a model, read on the
 * driver from the model's trees. A leaf at most WireLimits.TreeShapMaxTableDepth deep gets a
 * table of 2^depth patterns of its elements (the distinct features on its path), smallest tables
 * first while WireLimits.TreeShapMaxTableAddends lasts. Other leaves replay their path for a row
 * whose pattern no earlier row of its block had, at about LightGBM's cost for that leaf, which
 * grows with the square of its elements.
 *
 * @param hasCounts      every tree that splits carries leaf_count and internal_count, which
 *                       TreeSHAP weighs its paths by
 * @param leaves         leaves over all trees
 * @param replayedLeaves leaves without a table
 * @param replayedShare  their share of the work LightGBM's TreeSHAP does per row (per leaf,
 *                       elements^2 + depth)
 * @param tableAddends   the addends the tables hold, 8 bytes each
 */
final case class TreeShapTables(hasCounts: Boolean, leaves: Long, replayedLeaves: Long, replayedShare: Double,
    tableAddends: Long) {

  /** What the tables take in native memory once a contribution call has built them. */
  def tableBytes: Long = tableAddends * java.lang.Double.BYTES
}

object TreeShapTables {
  /** Adds up the trees of one model, as its text lists them. */
  final class Builder {
    private var hasCounts = true
    private var leaves = 0L
    private var deepLeaves = 0L
    private var deepWork = 0.0
    private var totalWork = 0.0
    // Per leaf shallow enough for a table: its table's addends and its work.
    private val tables = mutable.ArrayBuffer.empty[(Long, Double)]

    /**
     * One tree that splits: its nodes' children (a node, or ~leaf) and features, already checked
     * to form a tree; and whether it carries both counts.
     */
    def addTree(left: Array[Int], right: Array[Int], features: Array[Int], counted: Boolean): Unit = {
      hasCounts &&= counted
      // (node or ~leaf, depth, features on the path so far)
      val pending = mutable.Stack((0, 0, Set.empty[Int]))
      while (pending.nonEmpty) {
        val (index, depth, onPath) = pending.pop()
        if (index < 0) {
          val work = onPath.size.toDouble * onPath.size + depth
          leaves += 1
          totalWork += work
          if (depth > WireLimits.TreeShapMaxTableDepth) {
            deepLeaves += 1
            deepWork += work
          } else tables += (((1L << depth) * onPath.size, work))
        } else {
          val path = onPath + features(index)
          pending.push((left(index), depth + 1, path), (right(index), depth + 1, path))
        }
      }
    }

    /** A tree that never split: one leaf, no path, nothing to tabulate. */
    def addLeaf(): Unit = leaves += 1

    def result: TreeShapTables = {
      // As the native side hands out its budget: smallest tables first, until one does not fit.
      val bySize = tables.sortBy(_._1)
      var budget = WireLimits.TreeShapMaxTableAddends
      val tabled = bySize.indexWhere { case (size, _) => size > budget || { budget -= size; false } } match {
        case -1 => bySize.length
        case first => first
      }
      val replayedWork = deepWork + bySize.iterator.drop(tabled).map(_._2).sum
      TreeShapTables(hasCounts, leaves, deepLeaves + bySize.length - tabled,
        if (totalWork == 0) 0.0 else replayedWork / totalWork, bySize.iterator.take(tabled).map(_._1).sum)
    }
  }
}
