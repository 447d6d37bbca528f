package treescore.execution

import scala.annotation.switch

import org.apache.spark.SparkException
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, Cast, Expression, Literal, MutableProjection}
import org.apache.spark.sql.types.{ArrayType, BooleanType, ByteType, DoubleType, FloatType, IntegerType, LongType,
  ShortType}

import treescore.expressions.FeatureInput
import treescore.nativelib.OffHeapDoubles

/** Writes features into off-heap matrix storage. Not thread-safe. */
abstract class FeatureWriter {
  /** Writes one row's features: the feature at position p to matrix(offset + p * stride). */
  def write(row: InternalRow, matrix: OffHeapDoubles, offset: Long, stride: Long): Unit

  /**
   * Writes a columnar slice's features into `target`, feature-major (each feature's column its
   * slice.numRows values side by side). This default reads each row through its view, as
   * `write` reads rows; writers of plain columns read whole columns, or point `target` at them.
   */
  private[execution] def writeColumns(slice: ColumnSlice, target: FeatureMatrix): Unit = {
    var i = 0
    val rows = slice.rows
    while (rows.hasNext) {
      write(rows.next(), target.values, i, slice.numRows)
      i += 1
    }
  }
}

/** The writer for each way features arrive ([[FeatureInput]]); `args` must be bound to the row's schema. */
object FeatureWriters {
  def apply(input: FeatureInput, args: Seq[Expression], numFeatures: Int): FeatureWriter = input match {
    case FeatureInput.ScalarColumns => scalarColumns(args, numFeatures)
    case FeatureInput.VectorColumn => vectorColumn(args, numFeatures)
    case FeatureInput.ArrayColumn => arrayColumn(args, numFeatures)
  }

  /** One numeric or boolean column per feature. */
  def scalarColumns(args: Seq[Expression], numFeatures: Int): FeatureWriter = {
    require(args.length == numFeatures, s"${args.length} feature columns for $numFeatures features")
    scalarColumnsAt(args, Array.range(0, numFeatures))
  }

  /**
   * One numeric or boolean value per arg, arg j written as the feature at position `positions(j)`: how
   * ProgramTaskScorer writes a subset of its inputs (those that do not vary within a grid).
   */
  def scalarColumnsAt(args: Seq[Expression], positions: Array[Int]): FeatureWriter = {
    val direct = args.map(directType)
    if (direct.forall(_.isDefined)) {
      val ordinals = args.map {
        case b: BoundReference => b.ordinal
        case _ => -1 // an unread feature
      }
      new DirectColumnsWriter(ordinals.toArray, direct.flatten.toArray, positions)
    } else projectedWriter(args, positions)
  }

  // The primitive types a plain input column is read as directly, by position in this list.
  private val directTypes = IndexedSeq(DoubleType, FloatType, LongType, IntegerType, ShortType, ByteType, BooleanType)

  /**
   * For a feature that is a plain input column of a primitive type, its type's index in
   * directTypes. Such features are read straight from the row, converted as
   * Cast(_, DoubleType) converts them: a generated projection over thousands of feature
   * columns takes Spark longer to compile than the scoring takes. A feature no tree reads
   * (UnreadFeatures.Missing) is direct too: it is not read at all.
   */
  private def directType(arg: Expression): Option[Int] = arg match {
    case b: BoundReference => Some(directTypes.indexOf(b.dataType)).filter(_ >= 0)
    case Literal(null, _) => Some(-1)
    case _ => None
  }

  private final class DirectColumnsWriter(ordinals: Array[Int], types: Array[Int], positions: Array[Int])
      extends FeatureWriter {
    def write(row: InternalRow, matrix: OffHeapDoubles, offset: Long, stride: Long): Unit = {
      var j = 0
      while (j < ordinals.length) {
        val o = ordinals(j)
        val value = if (o < 0 || row.isNullAt(o)) Double.NaN else (types(j): @switch) match {
          case 0 => row.getDouble(o)
          case 1 => row.getFloat(o).toDouble
          case 2 => row.getLong(o).toDouble
          case 3 => row.getInt(o).toDouble
          case 4 => row.getShort(o).toDouble
          case 5 => row.getByte(o).toDouble
          case _ => if (row.getBoolean(o)) 1.0 else 0.0
        }
        matrix.put(offset + positions(j) * stride, value)
        j += 1
      }
    }

    // One feature at a time down the slice: a double column is read in place or copied in bulk
    // (ColumnVectors); other types are converted a column at a time, the type decided once per
    // column, not per value, and a column without nulls skips the null checks.
    override private[execution] def writeColumns(slice: ColumnSlice, target: FeatureMatrix): Unit = {
      var j = 0
      while (j < ordinals.length) {
        if (ordinals(j) < 0) target.readMissing(positions(j)) else writeColumn(slice, target, j)
        j += 1
      }
    }

    private def writeColumn(slice: ColumnSlice, target: FeatureMatrix, j: Int): Unit = {
      val n = slice.numRows
      val matrix = target.values
      val column = slice.columns.column(ordinals(j))
      val start = target.columnStart(positions(j), n)
      val inPlace = if (types(j) == 0) ColumnVectors.doublesInPlace(column, slice.first) else 0L
      if (inPlace != 0) target.readFrom(positions(j), inPlace)
      else if (types(j) == 0) ColumnVectors.copyDoubles(column, slice.first, n, matrix, start)
      else {
        val nullable = column.hasNull
        val first = slice.first
        var r = 0
        (types(j): @switch) match {
          case 1 => while (r < n) { matrix.put(start + r, if (nullable && column.isNullAt(first + r)) Double.NaN else column.getFloat(first + r).toDouble); r += 1 }
          case 2 => while (r < n) { matrix.put(start + r, if (nullable && column.isNullAt(first + r)) Double.NaN else column.getLong(first + r).toDouble); r += 1 }
          case 3 => while (r < n) { matrix.put(start + r, if (nullable && column.isNullAt(first + r)) Double.NaN else column.getInt(first + r).toDouble); r += 1 }
          case 4 => while (r < n) { matrix.put(start + r, if (nullable && column.isNullAt(first + r)) Double.NaN else column.getShort(first + r).toDouble); r += 1 }
          case 5 => while (r < n) { matrix.put(start + r, if (nullable && column.isNullAt(first + r)) Double.NaN else column.getByte(first + r).toDouble); r += 1 }
          case _ => while (r < n) { matrix.put(start + r, if (nullable && column.isNullAt(first + r)) Double.NaN else if (column.getBoolean(first + r)) 1.0 else 0.0); r += 1 }
        }
      }
    }
  }

  private def projectedWriter(args: Seq[Expression], positions: Array[Int]): FeatureWriter = new FeatureWriter {
    private val read = MutableProjection.create(args.map(a => if (a.dataType == DoubleType) a else Cast(a, DoubleType)))
    def write(row: InternalRow, matrix: OffHeapDoubles, offset: Long, stride: Long): Unit = {
      val values = read(row)
      var j = 0
      while (j < positions.length) {
        matrix.put(offset + positions(j) * stride, if (values.isNullAt(j)) Double.NaN else values.getDouble(j))
        j += 1
      }
    }
  }

  /** A Spark ML Vector (dense or sparse) holding every feature; absent sparse entries are 0. */
  private def vectorColumn(args: Seq[Expression], numFeatures: Int): FeatureWriter = new FeatureWriter {
    private val read = MutableProjection.create(args)
    // VectorUDT's storage: struct<type: tinyint (0 sparse, 1 dense), size: int, indices: array<int>, values: array<double>>
    def write(row: InternalRow, matrix: OffHeapDoubles, offset: Long, stride: Long): Unit = {
      val holder = read(row)
      if (holder.isNullAt(0)) return fillMissing(matrix, offset, stride, numFeatures)
      val vector = holder.getStruct(0, 4)
      val values = vector.getArray(3)
      if (vector.getByte(0) == 1) {
        if (values.numElements() != numFeatures) throw lengthError(values.numElements(), numFeatures, "vector")
        var j = 0
        while (j < numFeatures) { matrix.put(offset + j * stride, values.getDouble(j)); j += 1 }
      } else {
        val size = vector.getInt(1)
        if (size != numFeatures) throw lengthError(size, numFeatures, "vector")
        var j = 0
        while (j < numFeatures) { matrix.put(offset + j * stride, 0.0); j += 1 }
        val indices = vector.getArray(2)
        var k = 0
        while (k < indices.numElements()) {
          val index = indices.getInt(k)
          // Checked because a bad index would write outside this row of native memory.
          if (index < 0 || index >= numFeatures) {
            throw new SparkException(s"treescore: a row's sparse feature vector has index $index, outside 0..${numFeatures - 1}")
          }
          matrix.put(offset + index * stride, values.getDouble(k))
          k += 1
        }
      }
    }
  }

  /** An array<float> or array<double> holding every feature; a null element is missing. */
  private def arrayColumn(args: Seq[Expression], numFeatures: Int): FeatureWriter = new FeatureWriter {
    private val read = MutableProjection.create(args)
    private val isFloat = args.head.dataType.asInstanceOf[ArrayType].elementType == FloatType
    def write(row: InternalRow, matrix: OffHeapDoubles, offset: Long, stride: Long): Unit = {
      val holder = read(row)
      if (holder.isNullAt(0)) return fillMissing(matrix, offset, stride, numFeatures)
      val values = holder.getArray(0)
      if (values.numElements() != numFeatures) throw lengthError(values.numElements(), numFeatures, "array")
      var j = 0
      while (j < numFeatures) {
        val v = if (values.isNullAt(j)) Double.NaN else if (isFloat) values.getFloat(j).toDouble else values.getDouble(j)
        matrix.put(offset + j * stride, v)
        j += 1
      }
    }
  }

  /** A null vector or array: every feature is missing. */
  private def fillMissing(matrix: OffHeapDoubles, offset: Long, stride: Long, numFeatures: Int): Unit = {
    var j = 0
    while (j < numFeatures) { matrix.put(offset + j * stride, Double.NaN); j += 1 }
  }

  private def lengthError(length: Int, numFeatures: Int, what: String): SparkException =
    new SparkException(s"treescore: a row's feature $what has $length values but the model expects $numFeatures")
}
