package treescore.execution

import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, JoinedRow, SpecificInternalRow, UnsafeProjection}
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.execution.vectorized.{OnHeapColumnVector, WritableColumnVector}
import org.apache.spark.sql.execution.treescore.RowsToColumns
import org.apache.spark.sql.types.{StructField, StructType}
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarBatch}

import treescore.expressions.BatchableScore
import treescore.model.Engine

/**
 * What a batched score operator does in each partition, whichever way its input arrives and its
 * output leaves: opens the task's scorers with the first batch (an empty partition leases no
 * model and allocates nothing), scores each batch with every call, and appends the scores to
 * the `passThrough` columns, as rows or as column vectors. Built on the driver and shipped with
 * the task.
 */
private[execution] final case class BatchScoring(scores: Seq[BatchableScore], engines: Seq[Engine],
    inputSchema: Seq[Attribute], passThrough: Seq[Attribute], resultAttrs: Seq[Attribute], batchRows: Int,
    nativeThreads: Int, metrics: Map[String, SQLMetric]) {

  /** Rows in batches of at most batchRows, each row copied (the child reuses one row buffer). */
  def rowBatches(rows: Iterator[InternalRow]): Iterator[InputBatch] =
    new TimedIterator(rows.map(_.copy()).grouped(batchRows), metrics("inputTime")).map(batch => new RowBatch(batch))

  /** Columnar batches from the child, each read as slices of at most batchRows rows. */
  def columnSlices(batch: ColumnarBatch): Iterator[ColumnSlice] =
    Iterator.range(0, batch.numRows, batchRows).map(first => new ColumnSlice(batch, first, math.min(batchRows, batch.numRows - first)))

  /** The child's columnar batches, timed as input. */
  def columnarInput(batches: Iterator[ColumnarBatch]): Iterator[ColumnarBatch] = new TimedIterator(batches, metrics("inputTime"))

  /** Scores one partition's batches, each row joined to its scores as the row is read. */
  def scorePartition(batches: Iterator[InputBatch]): Iterator[InternalRow] = {
    lazy val scorer = open()
    val results = new SpecificInternalRow(resultAttrs.map(_.dataType))
    val joined = new JoinedRow
    val toOutput = UnsafeProjection.create(passThrough ++ resultAttrs, inputSchema ++ resultAttrs)
    val numOutputRows = metrics("numOutputRows")
    batches.flatMap { batch =>
      scorer.score(batch)
      numOutputRows += batch.numRows
      batch.rows.zipWithIndex.map { case (row, i) =>
        scorer.results(i, results)
        toOutput(joined(row, results))
      }
    }
  }

  /**
   * Scores one partition's columnar batches into batches of the pass-through columns (the
   * child's own vectors) and one new vector per score, for a parent that reads columns.
   */
  def scoreColumnarPartition(batches: Iterator[ColumnarBatch]): Iterator[ColumnarBatch] = {
    lazy val scorer = open()
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
    batches.map { batch =>
      vectors.foreach(_.reset())
      columnSlices(batch).foreach { slice =>
        scorer.score(slice)
        var i = 0
        while (i < slice.numRows) { scorer.results(i, results); toColumns.append(results, vectors); i += 1 }
      }
      numOutputRows += batch.numRows
      new ColumnarBatch(passed.map(batch.column) ++ vectors.map(v => v: ColumnVector), batch.numRows)
    }
  }

  private def open(): BatchScorer = {
    val opened = new BatchScorer(scores, engines, inputSchema, batchRows, nativeThreads, metrics)
    TaskContext.get().addTaskCompletionListener[Unit](_ => opened.close())
    opened
  }
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
