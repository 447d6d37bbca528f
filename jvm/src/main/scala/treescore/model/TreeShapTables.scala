package treescore.model

import scala.collection.mutable

import treescore.wire.WireLimits

/**
 * What treescore's TreeSHAP (native/src/engine/tree_shap.h) would keep for a model, read on the
 * driver from the model's trees. A leaf at most WireLimits.TreeShapMaxTableDepth deep gets a
 * table of 2^depth patterns of its elements (the distinct features on its path), smallest tables
 * first while the model's table budget lasts: WireLimits.TreeShapMaxTableAddends, or less where
 * the model cache gives the model less ([[within]]). Other leaves replay their path for a row
 * whose pattern no earlier row of its block had, at about LightGBM's cost for that leaf, which
 * grows with the square of its elements.
 *
 * @param hasCounts      every tree that splits carries leaf_count and internal_count, which
 *                       TreeSHAP weighs its paths by
 * @param leaves         leaves over all trees
 * @param replayedLeaves leaves without a table
 * @param replayedShare  their share of the work LightGBM's TreeSHAP does per row (per leaf,
 *                       elements^2 + depth; where only some leaves of one table size get tables,
 *                       the size's work is shared evenly)
 * @param tableAddends   the addends the tables hold, 8 bytes each
 * @param candidates     the leaves that may get a table, to choose them within another budget
 */
final case class TreeShapTables(hasCounts: Boolean, leaves: Long, replayedLeaves: Long, replayedShare: Double,
    tableAddends: Long, candidates: TreeShapTables.Candidates = TreeShapTables.Candidates.Empty) {

  /** What the tables take in native memory once a contribution call has built them. */
  def tableBytes: Long = tableAddends * java.lang.Double.BYTES

  /** What the tables keep where they may hold at most `maxAddends` addends (the wire limit at most). */
  def within(maxAddends: Long): TreeShapTables = candidates.choose(hasCounts, leaves, maxAddends)
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
      val bySize = tables.groupBy(_._1).toArray.sortBy(_._1)
      new Candidates(bySize.map(_._1), bySize.map(_._2.length.toLong), bySize.map(_._2.iterator.map(_._2).sum), deepLeaves,
        deepWork, totalWork).choose(hasCounts, leaves, WireLimits.TreeShapMaxTableAddends)
    }
  }

  /**
   * The leaves shallow enough for a table, by table size (addends) ascending: how many leaves
   * have each size, and their work. Then the deep leaves, which always replay, and all the work.
   * Kept in arrays of one entry per distinct size, a few hundred at most, which travel with the
   * model to executors.
   */
  final class Candidates(sizes: Array[Long], counts: Array[Long], works: Array[Double], deepLeaves: Long,
      deepWork: Double, totalWork: Double) extends Serializable {

    /** As the native side hands out its budget: smallest tables first, until one does not fit. */
    def choose(hasCounts: Boolean, leaves: Long, maxAddends: Long): TreeShapTables = {
      var budget = math.max(0L, math.min(maxAddends, WireLimits.TreeShapMaxTableAddends))
      var tabled = 0L
      var addends = 0L
      var replayedWork = deepWork
      var full = true // every smaller size got all its tables
      for (i <- sizes.indices) {
        val taken = if (full) math.min(counts(i), budget / sizes(i)) else 0L
        budget -= taken * sizes(i)
        tabled += taken
        addends += taken * sizes(i)
        replayedWork += works(i) * (counts(i) - taken) / counts(i)
        full &&= taken == counts(i)
      }
      TreeShapTables(hasCounts, leaves, deepLeaves + counts.sum - tabled, if (totalWork == 0) 0.0 else replayedWork / totalWork, addends,
        this)
    }
  }

  object Candidates {
    val Empty: Candidates = new Candidates(Array.empty, Array.empty, Array.empty, 0L, 0.0, 0.0)
  }
}
