package treescore.execution

import java.util.{LinkedHashMap => JLinkedHashMap, Map => JMap}

/**
 * The best keys each partition of one top-K query (one group) has kept so far, shared by the
 * query's tasks in this JVM: a task takes as its floor the k-th best of the other partitions'
 * keys, and drops its rows below it unscored. Tasks publish after every batch, so tasks running
 * side by side raise each other's floors as they go.
 *
 * Why that is exact: the keys of partition q are the scores of rows that q's scan kept, so a
 * row below the floor is beaten by k rows that reach the top-K operator. A task never takes its
 * own partition's keys, so a recomputed partition (after a failure, or a speculative copy) keeps
 * the rows an earlier attempt published, or drops them only because k rows of other partitions
 * beat them; either way k rows that reach the top-K operator beat every row dropped below those
 * keys. Inputs are recomputed as they were, as Spark's retries assume of deterministic plans.
 */
private[treescore] final class TopKBoard(k: Int) {
  private val keysByPartition = new java.util.HashMap[Int, Array[Double]] // each in descending order
  @volatile private var published = 0 // how many times keys were published: floors change only then

  /** The k-th best key of the partitions other than `partition`, or -infinity while they have fewer than k. */
  def floor(partition: Int): Double = {
    val others = synchronized {
      val found = Seq.newBuilder[Array[Double]]
      keysByPartition.forEach((p, keys) => if (p != partition && keys.nonEmpty) found += keys)
      found.result()
    }
    // Merges the partitions' descending keys until the k-th: k steps, whatever their number.
    val heads = new java.util.PriorityQueue[(Array[Double], Int)](math.max(1, others.size),
      (a: (Array[Double], Int), b: (Array[Double], Int)) => java.lang.Double.compare(b._1(b._2), a._1(a._2)))
    others.foreach(keys => heads.add((keys, 0)))
    var taken = 0
    var key = Double.NegativeInfinity
    while (taken < k && !heads.isEmpty) {
      val (keys, at) = heads.poll()
      key = keys(at)
      taken += 1
      if (at + 1 < keys.length) heads.add((keys, at + 1))
    }
    if (taken < k) Double.NegativeInfinity else key
  }

  /** A partition's scan has kept rows with these keys (its best so far, at most k; NaN left out): they replace its last. */
  def publish(partition: Int, keys: Array[Double]): Unit = {
    val ascending = keys.filterNot(_.isNaN)
    java.util.Arrays.sort(ascending)
    val descending = ascending.reverse
    synchronized {
      keysByPartition.put(partition, descending)
      published += 1
    }
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
