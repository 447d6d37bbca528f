package treescore.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, BindReferences, Expression, LeafExpression}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.types.{DataType, DoubleType}

import treescore.ensemble.{EncodedProgram, ProgramEncoding}
import treescore.expressions.{GridValue, ProgramScoreExpression}
import treescore.model.{Engine, IterationRange}
import treescore.nativelib.{ModelCache, NativeProgram, OffHeapDoubles, OffHeapInts}

/**
 * One task's state for an ensemble, route, cascade or grid call: leases on every model inside
 * (all in the engine the plan chose), the compiled native program, its inputs as a feature
 * matrix (read in place from column vectors where they can be), its route indices, and off-heap
 * buffers for grid values and outputs. A grid's points are never rows of the
 * DataFrame: each row's inputs are written once, and per point only the inputs that vary (the
 * varied ones and those derived from them), so the engine can share the rest of the work
 * between a row's points. Built by [[ProgramTaskScorer.open]], which releases whatever it
 * acquired if any step fails.
 */
private[treescore] final class ProgramTaskScorer private (call: ProgramScoreExpression, engine: Engine,
    program: NativeProgram, inputs: ProgramInputs, fixedInputs: FeatureMatrix,
    routes: RouteIndices, buffers: ProgramBuffers, nativeThreads: Int,
    metrics: Map[String, SQLMetric], owned: Owned) extends TaskScorer {

  private val pointValues = call.grid.map(_.valuesAt).getOrElse(Array(Array.empty[Double]))
  private val gridPoints = call.pointsPerRow
  private val valuesPerPoint = call.valuesPerPoint
  private val numVarying = inputs.varying.length
  private val numSlots = routes.numSlots

  override def score(batch: InputBatch): Unit = {
    val written = System.nanoTime()
    fixedInputs.fill(batch)
    if (numSlots > 0 || numVarying > 0) {
      var i = 0L
      val rows = batch.rows
      while (rows.hasNext) {
        val row = rows.next()
        if (numSlots > 0) routes.write(row, i * gridPoints, gridPoints)
        var k = 0
        while (k < gridPoints && numVarying > 0) {
          inputs.point.values = pointValues(k)
          inputs.perPoint.write(row, buffers.gridValues, (i * gridPoints + k) * numVarying, 1)
          k += 1
        }
        i += 1
      }
    }
    val total = Math.toIntExact(batch.numRows.toLong * gridPoints)
    val start = System.nanoTime()
    metrics.get("featureWriteTime").foreach(_ += start - written)
    val escalated = program.evaluate(fixedInputs.columns, total, if (numSlots > 0) Some(routes.indices) else None,
      nativeThreads, gridPoints, inputs.varying, buffers.gridValues, call.grid.map(_.monotone.code).getOrElse(0),
      call.grid.map(_.run).getOrElse(1), call.contributions, buffers.outputs)
    metrics.get("nativeTime").foreach(_ += System.nanoTime() - start)
    metrics.get("escalatedRows").foreach(_ += escalated)
    metrics.get(TaskScorers.rowsMetric(engine)).foreach(_ += total)
  }

  override def result(i: Int): Any = {
    // Point j's value, or its contributions; NaN only comes from a route that scores null.
    def value(j: Long): Any = if (call.contributions) {
      val expected = buffers.outputs.get((j + 1) * valuesPerPoint - 1)
      if (expected.isNaN && call.scorer.nullable) null else buffers.outputs.arrayData(j * valuesPerPoint, valuesPerPoint)
    } else {
      val v = buffers.outputs.get(j)
      if (v.isNaN && call.scorer.nullable) null else v
    }
    if (call.grid.isEmpty) value(i)
    else new GenericArrayData(Array.tabulate[Any](gridPoints)(k => value(i.toLong * gridPoints + k)))
  }

  override def close(): Unit = owned.close()
}

private[treescore] object ProgramTaskScorer {
  /** The call's scorer encoded and compiled over leases on its models in `engine`, all held by `owned`. */
  private[execution] def compile(call: ProgramScoreExpression, engine: Engine, metrics: Map[String, SQLMetric],
      owned: Owned): (EncodedProgram, NativeProgram) = {
    val encoded = ProgramEncoding.encode(call.scorer, call.featureInputs, call.keyInputs)
    val leases = ModelCache.acquireAll(encoded.models.map(ModelCache.Request(_, IterationRange.All, engine, call.modelKind)))
      .map(owned(_))
    leases.foreach(l => metrics.get("modelLoadTime").foreach(_ += l.loadNanos))
    (encoded, owned(NativeProgram.compile(encoded.code, encoded.constants, leases.map(_.model))))
  }

  def open(call: ProgramScoreExpression, engine: Engine, inputSchema: Seq[Attribute], batchRows: Int,
      nativeThreads: Int, metrics: Map[String, SQLMetric]): ProgramTaskScorer = Owned.building { owned =>
    val (encoded, program) = compile(call, engine, metrics, owned)

    val numInputs = call.featureInputs.length
    // The grid's inputs read this scorer's own grid point in place of each GridValue placeholder.
    val point = new GridPoint
    val axisOf = call.grid.map(_.axes.map(_.input).zipWithIndex.toMap).getOrElse(Map.empty[String, Int])
    val bound = BindReferences.bindReferences(call.children, inputSchema).map(_.transform {
      case g: GridValue => GridPointValue(g.name, axisOf(g.name), point)
    })
    val inputs = ProgramInputs(bound.take(numInputs), point)

    // The inputs that vary are never read from it: each point's values come from the grid values.
    val fixedInputs = owned(new FeatureMatrix(inputs.fixed, numInputs, batchRows, None, None))
    val expandedRows = batchRows.toLong * call.pointsPerRow
    val buffers = ProgramBuffers(
      gridValues = owned(new OffHeapDoubles(expandedRows * inputs.varying.length)),
      outputs = owned(new OffHeapDoubles(expandedRows * call.valuesPerPoint)))
    val routes = new RouteIndices(bound.drop(numInputs), encoded.routeSlots,
      owned(new OffHeapInts(expandedRows * encoded.routeSlots.length)))
    new ProgramTaskScorer(call, engine, program, inputs, fixedInputs, routes, buffers, nativeThreads, metrics,
      owned)
  }
}

/**
 * How a program's inputs are written: `fixed` writes, once per row, the inputs that are the
 * same at every grid point (every input without a grid); `perPoint` writes the others, the
 * `varying` input positions, once per point, reading `point`.
 */
private[execution] final case class ProgramInputs(fixed: FeatureWriter, perPoint: FeatureWriter, varying: Array[Int],
    point: GridPoint)

private[execution] object ProgramInputs {
  def apply(bound: Seq[Expression], point: GridPoint): ProgramInputs = {
    val (perPoint, fixed) = bound.zipWithIndex.partition { case (input, _) => input.find(_.isInstanceOf[GridPointValue]).isDefined }
    ProgramInputs(FeatureWriters.scalarColumnsAt(fixed.map(_._1), fixed.map(_._2).toArray),
      FeatureWriters.scalarColumnsAt(perPoint.map(_._1), Array.range(0, perPoint.length)), perPoint.map(_._2).toArray,
      point)
  }
}

/** A program task's off-heap buffers besides its inputs, each owned by the task's [[Owned]]. */
private[execution] final case class ProgramBuffers(gridValues: OffHeapDoubles, outputs: OffHeapDoubles)

/** The grid point a task scorer is writing, owned by that scorer: each axis's value. */
private[execution] final class GridPoint {
  var values: Array[Double] = Array.empty
}

/** Reads one axis of a task scorer's current grid point; it stands where the plan has a GridValue. */
private[execution] case class GridPointValue(name: String, axis: Int, point: GridPoint) extends LeafExpression
    with CodegenFallback {
  override def dataType: DataType = DoubleType
  override def nullable: Boolean = false
  override def eval(input: InternalRow): Any = point.values(axis)
  override def toString: String = s"grid($name)"
}
