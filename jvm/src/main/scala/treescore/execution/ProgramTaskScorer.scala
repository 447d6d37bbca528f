package treescore.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, BindReferences, Expression, LeafExpression, MutableProjection}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.types.{DataType, DoubleType}

import treescore.ensemble.{EncodedProgram, ProgramEncoding}
import treescore.expressions.{GridValue, ProgramScoreExpression}
import treescore.model.{Engine, IterationRange, ModelCache, NativeProgram, OffHeapDoubles, OffHeapInts}

/**
 * One task's state for an ensemble, route, cascade or grid call: leases on every model inside
 * (all in the engine the plan chose),
 * the compiled native program, and off-heap buffers for inputs, route indices and outputs.
 * A grid's rows are expanded here, K grid points per row, never in the DataFrame. Built by
 * [[ProgramTaskScorer.open]], which releases whatever it acquired if any step fails.
 */
private[treescore] final class ProgramTaskScorer private (call: ProgramScoreExpression, engine: Engine,
    encoded: EncodedProgram,
    program: NativeProgram, features: FeatureWriter, keys: MutableProjection, keyTypes: Seq[DataType],
    point: GridPoint, inputs: OffHeapDoubles, routes: OffHeapInts, outputs: OffHeapDoubles, nativeThreads: Int,
    metrics: Map[String, SQLMetric], owned: Owned) extends TaskScorer {

  private val gridValues = call.grid.map(_.values.toArray).getOrElse(Array.empty[Double])
  private val gridPoints = call.pointsPerRow
  private val numInputs = call.featureInputs.length
  private val numSlots = encoded.routeSlots.length

  override def score(batch: collection.Seq[InternalRow]): Unit = {
    var i = 0L
    val rows = batch.iterator
    while (rows.hasNext) {
      val row = rows.next()
      if (numSlots > 0) writeRoutes(row, i)
      var k = 0
      while (k < gridPoints) {
        if (gridValues.nonEmpty) point.value = gridValues(k)
        features.write(row, inputs, (i * gridPoints + k) * numInputs)
        k += 1
      }
      i += 1
    }
    val total = Math.toIntExact(batch.length.toLong * gridPoints)
    val start = System.nanoTime()
    val escalated = program.evaluate(inputs, total, if (numSlots > 0) Some(routes) else None, nativeThreads,
      gridPoints, call.grid.map(_.monotone.code).getOrElse(0), outputs)
    metrics.get("nativeTime").foreach(_ += System.nanoTime() - start)
    metrics.get("escalatedRows").foreach(_ += escalated)
    metrics.get(TaskScorers.rowsMetric(engine)).foreach(_ += total)
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

  override def close(): Unit = owned.close()
}

private[treescore] object ProgramTaskScorer {
  def open(call: ProgramScoreExpression, engine: Engine, inputSchema: Seq[Attribute], batchRows: Int,
      nativeThreads: Int, metrics: Map[String, SQLMetric]): ProgramTaskScorer = Owned.building { owned =>
    val encoded = ProgramEncoding.encode(call.scorer, call.featureInputs, call.keyInputs)
    val leases = encoded.models.map(m => owned(ModelCache.acquire(m, IterationRange.All, engine)))
    leases.foreach(l => metrics.get("modelLoadTime").foreach(_ += l.loadNanos))
    val program = owned(NativeProgram.compile(encoded.code, encoded.constants, leases.map(_.model)))

    val numInputs = call.featureInputs.length
    // The grid's inputs read this scorer's own grid point in place of the GridValue placeholder.
    val point = new GridPoint
    val bound = BindReferences.bindReferences(call.children, inputSchema).map(_.transform {
      case g: GridValue => GridPointValue(g.name, point)
    })
    val features = FeatureWriters.scalarColumns(bound.take(numInputs), numInputs)
    val keys = MutableProjection.create(bound.drop(numInputs))

    val expandedRows = batchRows.toLong * call.pointsPerRow
    val inputs = owned(new OffHeapDoubles(expandedRows * numInputs))
    val routes = owned(new OffHeapInts(expandedRows * encoded.routeSlots.length))
    val outputs = owned(new OffHeapDoubles(expandedRows))
    new ProgramTaskScorer(call, engine, encoded, program, features, keys, bound.drop(numInputs).map(_.dataType), point,
      inputs, routes, outputs, nativeThreads, metrics, owned)
  }
}

/** The grid point a task scorer is writing, owned by that scorer. */
private[execution] final class GridPoint {
  var value: Double = Double.NaN
}

/** Reads a task scorer's current grid point; it stands where the plan has a GridValue. */
private[execution] case class GridPointValue(name: String, point: GridPoint) extends LeafExpression with CodegenFallback {
  override def dataType: DataType = DoubleType
  override def nullable: Boolean = false
  override def eval(input: InternalRow): Any = point.value
  override def toString: String = s"grid($name)"
}
