package treescore

import java.util

import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.{BigIntVector, FieldVector, Float4Vector, Float8Vector}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.catalog.{SupportsRead, Table, TableCapability, TableProvider}
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.connector.read.{Batch, InputPartition, PartitionReader, PartitionReaderFactory, Scan,
  ScanBuilder}
import org.apache.spark.sql.types.{DoubleType, FloatType, LongType, StructField, StructType}
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import org.apache.spark.sql.vectorized.{ArrowColumnVector, ColumnVector, ColumnarBatch}

/**
 * A data source whose scan produces Arrow-backed column vectors, as Arrow-native readers do:
 * `rows` rows in 2 partitions of batches of at most 64 rows, with `id` (long), `f0`..`f5`
 * (double, f4 float) computed from the id, and nulls in f1 at every 7th row. Rows are a pure
 * function of the id, so tests recompute them.
 */
class ArrowTestSource extends TableProvider {
  override def inferSchema(options: CaseInsensitiveStringMap): StructType = ArrowTestSource.schema
  override def getTable(schema: StructType, partitioning: Array[Transform], properties: util.Map[String, String]): Table =
    new ArrowTestSource.ArrowTable(Option(properties.get("rows")).map(_.toInt).getOrElse(1000))
}

object ArrowTestSource {
  val schema: StructType = StructType(StructField("id", LongType, nullable = false) +:
    (0 to 5).map(i => StructField(s"f$i", if (i == 4) FloatType else DoubleType)))

  /** Feature f of row id, or null. */
  def value(id: Long, f: Int): Option[Double] =
    if (f == 1 && id % 7 == 0) None
    else if (f == 4) Some(math.sin(id * 0.37 + f).toFloat.toDouble)
    else Some(math.sin(id * 0.37 + f) * (f + 1) + (if (id % 11 == 0) 0.0 else 0.25))

  final class ArrowTable(rows: Int) extends Table with SupportsRead {
    override def name(): String = "arrow-test"
    override def schema(): StructType = ArrowTestSource.schema
    override def capabilities(): util.Set[TableCapability] = util.EnumSet.of(TableCapability.BATCH_READ)
    override def newScanBuilder(options: CaseInsensitiveStringMap): ScanBuilder = () => new Scan with Batch {
      override def readSchema(): StructType = ArrowTestSource.schema
      override def toBatch: Batch = this
      override def planInputPartitions(): Array[InputPartition] = Array(Part(0, rows / 2), Part(rows / 2, rows))
      override def createReaderFactory(): PartitionReaderFactory = new Readers
    }
  }

  final case class Part(from: Int, until: Int) extends InputPartition

  final class Readers extends PartitionReaderFactory {
    override def supportColumnarReads(partition: InputPartition): Boolean = true
    override def createReader(partition: InputPartition): PartitionReader[InternalRow] =
      throw new UnsupportedOperationException("columnar only")
    override def createColumnarReader(partition: InputPartition): PartitionReader[ColumnarBatch] = {
      val Part(from, until) = partition
      new PartitionReader[ColumnarBatch] {
        private val allocator = new RootAllocator()
        private var position = from
        private var current: Seq[FieldVector] = Nil
        override def next(): Boolean = position < until
        override def get(): ColumnarBatch = {
          current.foreach(_.close())
          val n = math.min(64, until - position)
          val ids = new BigIntVector("id", allocator)
          ids.allocateNew(n)
          val features = (0 to 5).map { f =>
            val vector: FieldVector = if (f == 4) new Float4Vector(s"f$f", allocator) else new Float8Vector(s"f$f", allocator)
            vector.setInitialCapacity(n)
            vector.allocateNew()
            vector
          }
          for (r <- 0 until n) {
            val id = (position + r).toLong
            ids.set(r, id)
            features.zipWithIndex.foreach {
              case (v: Float8Vector, f) => value(id, f) match { case Some(x) => v.set(r, x); case None => v.setNull(r) }
              case (v: Float4Vector, f) => value(id, f) match { case Some(x) => v.set(r, x.toFloat); case None => v.setNull(r) }
              case _ =>
            }
          }
          current = ids +: features
          current.foreach(_.setValueCount(n))
          position += n
          new ColumnarBatch(current.map(v => new ArrowColumnVector(v): ColumnVector).toArray, n)
        }
        override def close(): Unit = { current.foreach(_.close()); allocator.close() }
      }
    }
  }
}
