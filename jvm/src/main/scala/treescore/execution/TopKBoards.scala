package treescore.execution

import java.util.{LinkedHashMap => JLinkedHashMap, Map => JMap}

/**
 * The best keys of each partition of one top-K query (one group) whose rows are all kept or
 * dropped, shared by the query's tasks in this JVM: a task takes as its floor the k-th best of
 * the other partitions' keys, and drops its rows below it unscored.
 *
 * Why that is exact: the keys of partition q are the scores of k rows that q's scan kept, so a
 * row below the floor is beaten by k rows that reach the top-K operator. A task never takes its
 * own partition's keys, so a recomputed partition (after a failure) keeps its own top rows, or
 * drops them only because k rows of other partitions beat them; inputs are recomputed as they
 * were, as Spark's retries assume of deterministic plans.
 */
private[treescore] final class TopKBoard(k: Int) {
  private val keysByPartition = new java.util.HashMap[Int, Array[Double]]
  @volatile private var published = 0 // how many times keys were published: floors change only then

  /** The k-th best key of the partitions other than `partition`, or -infinity while they have fewer than k. */
  def floor(partition: Int): Double = {
    val others = synchronized {
      val found = Array.newBuilder[Double]
      keysByPartition.forEach((p, keys) => if (p != partition) found ++= keys)
      found.result()
    }
    if (others.length < k) Double.NegativeInfinity
    else {
      java.util.Arrays.sort(others)
      others(others.length - k)
    }
  }

  /** A partition's scan is done: its best keys (at most k, NaN left out) join the board. */
  def publish(partition: Int, keys: Array[Double]): Unit = synchronized {
    keysByPartition.put(partition, keys.filterNot(_.isNaN))
    published += 1
  }

  /** floor(partition), computed again only when keys were published since the last call. */
  def floorFor(partition: Int): () => Double = {
    var seen = -1
    var last = Double.NegativeInfinity
    () => {
      val now = published
      if (now != seen) { seen = now; last = floor(partition) }
      last
    }
  }
}

private[execution] object TopKBoards {
  // The boards of recent query executions; an execution's board is looked up by the id its
  // operator drew when it was executed. Older boards are evicted: a query whose board is gone
  // gets a new one and is exact still, with a weaker floor.
  private val MaxBoards = 64
  private val boards = new JLinkedHashMap[String, TopKBoard](16, 0.75f, true) {
    override def removeEldestEntry(eldest: JMap.Entry[String, TopKBoard]): Boolean = size > MaxBoards
  }

  def apply(id: String, k: Int): TopKBoard = boards.synchronized {
    var board = boards.get(id)
    if (board == null) {
      board = new TopKBoard(k)
      boards.put(id, board)
    }
    board
  }
}
