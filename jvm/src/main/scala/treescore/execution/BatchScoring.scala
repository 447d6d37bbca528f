package treescore.execution

import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, JoinedRow, SpecificInternalRow, UnsafeProjection}
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.execution.vectorized.{OnHeapColumnVector, WritableColumnVector}
import org.apache.spark.sql.execution.treescore.RowsToColumns
import org.apache.spark.sql.types.{StructField, StructType}
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarBatch}

import scala.collection.mutable.ArrayBuffer

import treescore.expressions.BatchableScore
import treescore.model.Engine
import treescore.nativelib.{ModelCache, NativeMethods}
import treescore.rules.TopKSelection

/**
 * What a batched score operator does in each partition, whichever way its input arrives and its
 * output leaves: opens the task's scorers with the first batch (an empty partition leases no
 * model and allocates nothing), scores each batch with every call, and appends the scores to
 * the `passThrough` columns, as rows or as column vectors. Under a top-K query (`topK`), only
 * the rows that may reach the top are scored to the end and passed on. Built on the driver and
 * shipped with the task.
 */
private[execution] final case class BatchScoring(scores: Seq[BatchableScore], engines: Seq[Engine],
    inputSchema: Seq[Attribute], passThrough: Seq[Attribute], resultAttrs: Seq[Attribute], batchRows: Int,
    nativeThreads: Int, metrics: Map[String, SQLMetric], topK: Option[TopKSelection]) {
  // Names this execution's board of partitions' best keys (TopKBoards); drawn on the driver.
  private val topKBoard: String = java.util.UUID.randomUUID().toString

  /** Rows in batches of at most batchRows, each row copied (the child reuses one row buffer). */
  def rowBatches(rows: Iterator[InternalRow]): Iterator[InputBatch] =
    new TimedIterator(rows.map(_.copy()).grouped(batchRows), metrics("inputTime")).map(batch => new RowBatch(batch))

  /** Columnar batches from the child, each read as slices of at most batchRows rows. */
  def columnSlices(batch: ColumnarBatch): Iterator[ColumnSlice] =
    Iterator.range(0, batch.numRows, batchRows).map(first => new ColumnSlice(batch, first, math.min(batchRows, batch.numRows - first)))

  /** The child's columnar batches, timed as input. */
  def columnarInput(batches: Iterator[ColumnarBatch]): Iterator[ColumnarBatch] = new TimedIterator(batches, metrics("inputTime"))

  /** Scores one partition's batches, each row joined to its scores as the row is read. */
  def scorePartition(batches: Iterator[InputBatch]): Iterator[InternalRow] = topK match {
    case Some(selection) => selectPartition(batches, selection)
    case None => scoreEveryRow(batches)
  }

  private def scoreEveryRow(batches: Iterator[InputBatch]): Iterator[InternalRow] = {
    val hold = new PartitionHold
    lazy val scorer = { hold.begin(); hold(open(scores.indices)) }
    val results = new SpecificInternalRow(resultAttrs.map(_.dataType))
    val joined = new JoinedRow
    val toOutput = UnsafeProjection.create(passThrough ++ resultAttrs, inputSchema ++ resultAttrs)
    val numOutputRows = metrics("numOutputRows")
    hold.until(batches.flatMap { batch =>
      scorer.score(batch)
      numOutputRows += batch.numRows
      batch.rows.zipWithIndex.map { case (row, i) =>
        scorer.results(i, results)
        toOutput(joined(row, results))
      }
    })
  }

  /**
   * Scores one partition's columnar batches into batches of the pass-through columns (the
   * child's own vectors) and one new vector per score, for a parent that reads columns.
   */
  def scoreColumnarPartition(batches: Iterator[ColumnarBatch]): Iterator[ColumnarBatch] = {
    require(topK.isEmpty, "a top-K selection's output is rows")
    val hold = new PartitionHold
    lazy val scorer = { hold.begin(); hold(open(scores.indices)) }
    val resultSchema = StructType(resultAttrs.map(a => StructField(a.name, a.dataType, a.nullable)))
    lazy val vectors: Array[WritableColumnVector] = {
      val allocated = OnHeapColumnVector.allocateColumns(batchRows, resultSchema).asInstanceOf[Array[WritableColumnVector]]
      TaskContext.get().addTaskCompletionListener[Unit](_ => allocated.foreach(_.close()))
      allocated
    }
    val toColumns = new RowsToColumns(resultSchema)
    val results = new SpecificInternalRow(resultAttrs.map(_.dataType))
    val passed = passThrough.map(a => inputSchema.indexWhere(_.exprId == a.exprId)).toArray
    val numOutputRows = metrics("numOutputRows")
    hold.until(batches.map { batch =>
      vectors.foreach(_.reset())
      columnSlices(batch).foreach { slice =>
        scorer.score(slice)
        var i = 0
        while (i < slice.numRows) { scorer.results(i, results); toColumns.append(results, vectors); i += 1 }
      }
      numOutputRows += batch.numRows
      new ColumnarBatch(passed.map(batch.column) ++ vectors.map(v => v: ColumnVector), batch.numRows)
    })
  }

  /**
   * Under a top-K query: the selected call's scan drops each batch's rows that cannot reach the
   * top and scores the rest; the other calls score only the rows kept, and only those leave.
   * With one group, the query's partitions in this JVM lend each other their best keys so far as a floor.
   */
  private def selectPartition(batches: Iterator[InputBatch], selection: TopKSelection): Iterator[InternalRow] = {
    val others = scores.indices.filter(_ != selection.score)
    val partitionIndex = TaskContext.getPartitionId()
    val board = if (selection.groupBy.isEmpty) Some(TopKBoards(topKBoard, selection.k)) else None
    val floor = board.map(_.floorFor(partitionIndex)).getOrElse(() => Double.NegativeInfinity)
    val hold = new PartitionHold
    lazy val selector = {
      hold.begin()
      hold(TopKScorer.open(scores(selection.score), selection, inputSchema, batchRows, metrics))
    }
    lazy val rest = { hold.begin(); hold(open(others)) }
    val results = new SpecificInternalRow(resultAttrs.map(_.dataType))
    val joined = new JoinedRow
    val toOutput = UnsafeProjection.create(passThrough ++ resultAttrs, inputSchema ++ resultAttrs)
    val numOutputRows = metrics("numOutputRows")
    hold.until(batches.flatMap { batch =>
      val selected = selector.select(batch, floor())
      // The batch's kept rows are the partition's best so far: other partitions may drop below them.
      board.foreach(_.publish(partitionIndex, selector.bestKeys))
      val kept = new ArrayBuffer[InternalRow](selected.length)
      val rows = batch.rows
      var i = 0
      while (kept.length < selected.length) {
        val row = rows.next()
        if (selected(kept.length) == i) kept += row.copy()
        i += 1
      }
      if (others.nonEmpty && kept.nonEmpty) rest.score(new RowBatch(kept)) // counts the batch
      else metrics("numBatches") += 1
      numOutputRows += batch.numRows
      kept.iterator.zipWithIndex.map { case (row, j) =>
        results.update(selection.score, selector.score(selected(j)))
        if (others.nonEmpty) rest.results(j, results)
        toOutput(joined(row, results))
      }
    })
  }

  /**
   * What one partition holds while it scores: its part in the task's model leases
   * ([[TaskLeases]]), named as the partition is set up, and the scorers it opens. Both go back
   * after the partition's last row, so that an operator that begins later in the same task finds
   * them returned, or with the task, whichever comes first.
   */
  private final class PartitionHold {
    private val part = TaskLeases.expect(TaskScorers.operatorRequests(scores, engines, topK))
    private val scorers = new Owned
    private var begun = false
    TaskContext.get().addTaskCompletionListener[Unit](_ => end())

    /**
     * Before the scorers open: watches the most native memory held in this JVM while the task's
     * thread allocates (its calls' working memory included), added to the task's metric when it
     * completes; and leases the models of the task's operators at once, so that the cache admits
     * them together ([[ModelCache.acquireAll]]) rather than one call's at a time, which could wait
     * on a task waiting on this one.
     */
    def begin(): Unit = synchronized {
      if (!begun) {
        begun = true
        NativeMethods.takeThreadPeak()
        TaskContext.get().addTaskCompletionListener[Unit](_ => metrics("nativePeakBytes") += NativeMethods.takeThreadPeak())
        val loadNanos = part.begin() // the loads happen here
        metrics.get("modelLoadTime").foreach(_ += loadNanos)
      }
    }

    /** A scorer just opened, closed when the partition ends. */
    def apply[T <: AutoCloseable](scorer: T): T = synchronized(scorers(scorer))

    /** `rows`, after whose last the partition's scorers close and its part ends. */
    def until[T](rows: Iterator[T]): Iterator[T] = new Iterator[T] {
      override def hasNext: Boolean = rows.hasNext || { end(); false }
      override def next(): T = rows.next()
    }

    private def end(): Unit = synchronized { try scorers.close() finally part.end() }
  }

  /** The task's scorer for the calls `calls`, whose results go to the same fields of the result row. */
  private def open(calls: IndexedSeq[Int]): BatchScorer =
    new BatchScorer(calls.map(scores), calls.map(engines), inputSchema, batchRows,
      CallThreads.forTask(nativeThreads, TaskContext.get().cpus()), metrics, calls)
}

/** An iterator that adds the time its source takes (in hasNext and next) to `metric`. */
private[execution] final class TimedIterator[T](source: Iterator[T], metric: SQLMetric) extends Iterator[T] {
  override def hasNext: Boolean = {
    val start = System.nanoTime()
    try source.hasNext finally metric += System.nanoTime() - start
  }
  override def next(): T = {
    val start = System.nanoTime()
    try source.next() finally metric += System.nanoTime() - start
  }
}
