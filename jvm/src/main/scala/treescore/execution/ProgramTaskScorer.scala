package treescore.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, BindReferences, Expression, MutableProjection}
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.execution.metric.SQLMetric

import treescore.ensemble.ProgramEncoding
import treescore.expressions.{FeatureInput, GridValue, ProgramScoreExpression, TaskScorer}
import treescore.model.{ModelCache, ModelLease, OffHeapDoubles, OffHeapInts}
import treescore.nativelib.NativeMethods

/**
 * One task's state for an ensemble, route, cascade or grid call: leases on every model inside,
 * the compiled native program, and off-heap buffers for inputs, route indices and outputs.
 * A grid's rows are expanded here, K grid points per row, never in the DataFrame.
 */
private[treescore] final class ProgramTaskScorer(call: ProgramScoreExpression, inputSchema: Seq[Attribute],
    batchRows: Int, nativeThreads: Int, metrics: Map[String, SQLMetric]) extends TaskScorer {

  private val encoded = ProgramEncoding.encode(call.scorer, call.featureInputs, call.keyInputs)
  private val gridPoints = call.grid.map(_.values.length).getOrElse(1)
  private val gridValues = call.grid.map(_.values.toArray).getOrElse(Array.empty[Double])
  private val numInputs = call.featureInputs.length
  private val numSlots = encoded.routeSlots.length

  private val leases: Seq[ModelLease] = {
    val opened = Seq.newBuilder[ModelLease]
    try encoded.models.foreach(m => opened += ModelCache.acquire(m))
    catch { case e: Throwable => opened.result().foreach(_.close()); throw e }
    opened.result()
  }
  leases.foreach(l => metrics.get("modelLoadTime").foreach(_ += l.loadNanos))

  private val program: Long = try {
    NativeMethods.compileProgram(encoded.code, encoded.constants, leases.map(_.model.handle).toArray)
  } catch { case e: Throwable => leases.foreach(_.close()); throw e }

  private val bound: Seq[Expression] = BindReferences.bindReferences(call.children, inputSchema)
  private val features = FeatureInput.ScalarColumns.writer(bound.take(numInputs), numInputs)
  private val keys = MutableProjection.create(bound.drop(numInputs))
  private val keyTypes = bound.drop(numInputs).map(_.dataType)
  // The projections call back into these instances, so setting `current` moves the grid point.
  private val gridHandles = bound.take(numInputs).flatMap(_.collect { case g: GridValue => g })

  private val expandedRows = batchRows.toLong * gridPoints
  private val inputs = new OffHeapDoubles(expandedRows * numInputs)
  private val routes = new OffHeapInts(expandedRows * numSlots)
  private val outputs = new OffHeapDoubles(expandedRows)

  override def score(batch: collection.Seq[InternalRow]): Unit = {
    var i = 0L
    val rows = batch.iterator
    while (rows.hasNext) {
      val row = rows.next()
      if (numSlots > 0) writeRoutes(row, i)
      var k = 0
      while (k < gridPoints) {
        if (gridValues.nonEmpty) gridHandles.foreach(_.current = gridValues(k))
        features.write(row, inputs, (i * gridPoints + k) * numInputs)
        k += 1
      }
      i += 1
    }
    val total = Math.toIntExact(batch.length.toLong * gridPoints)
    val start = System.nanoTime()
    val escalated = NativeMethods.evaluateProgram(program, inputs.address, inputs.capacity, total,
      if (numSlots > 0) routes.address else 0L, routes.capacity, nativeThreads, gridPoints,
      call.grid.map(_.monotone.code).getOrElse(0), outputs.address, outputs.capacity)
    metrics.get("nativeTime").foreach(_ += System.nanoTime() - start)
    metrics.get("escalatedRows").foreach(_ += escalated)
  }

  /** Each route slot's index for this row, repeated for each of its grid points. */
  private def writeRoutes(row: InternalRow, i: Long): Unit = {
    val keyRow = keys(row)
    var s = 0
    while (s < numSlots) {
      val slot = encoded.routeSlots(s)
      val key = if (keyRow.isNullAt(slot.keyInput)) "null" else keyRow.get(slot.keyInput, keyTypes(slot.keyInput)).toString
      val index = slot.routeIndex(key)
      var k = 0
      while (k < gridPoints) { routes.put((i * gridPoints + k) * numSlots + s, index); k += 1 }
      s += 1
    }
  }

  override def result(i: Int): Any = {
    def value(j: Long): Any = {
      val v = outputs.get(j)
      if (v.isNaN && call.scorer.nullable) null else v // NaN only comes from a route that scores null
    }
    if (call.grid.isEmpty) value(i)
    else new GenericArrayData(Array.tabulate[Any](gridPoints)(k => value(i.toLong * gridPoints + k)))
  }

  override def close(): Unit = {
    inputs.close()
    routes.close()
    outputs.close()
    NativeMethods.releaseProgram(program)
    leases.foreach(_.close())
  }
}
