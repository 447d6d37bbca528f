package treescore.rules

import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.execution.{ApplyColumnarRulesAndInsertTransitions, ColumnarRule, FileSourceScanExec, ProjectExec,
  SparkPlan}
import org.apache.spark.sql.execution.adaptive.TableCacheQueryStageExec
import org.apache.spark.sql.execution.columnar.InMemoryTableScanExec
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.treescore.SessionCopies

import treescore.TreescoreConf
import treescore.execution.{BatchScoreExec, ColumnarBatchScoreExec}

/**
 * Before Spark inserts its row/columnar transitions, a batched score operator whose child can
 * produce columnar batches becomes [[ColumnarBatchScoreExec]], which reads the vectors itself:
 * Spark then puts no ColumnarToRowExec between them.
 *
 * Spark's own scans produce batches only for at most spark.sql.codegen.maxFields columns,
 * because above that whole-stage code generation, their usual reader, gives up; scoring reads
 * hundreds of features, and the operator needs no generated code to read batches. So a
 * Parquet or ORC scan over more columns is asked for batches through a copy of its session
 * without that limit, and the columnar cache is read as batches whatever its width.
 */
object ColumnarScoreInput extends ColumnarRule {
  override def preColumnarTransitions: Rule[SparkPlan] = new Rule[SparkPlan] {
    override def apply(plan: SparkPlan): SparkPlan =
      if (!TreescoreConf.ColumnarEnabled.from(conf)) plan
      else plan.transformUp {
        case b: BatchScoreExec => columnar(b.child).map(ColumnarBatchScoreExec(b.scores, b.engines, b.passThrough, b.resultAttrs, _, b.topK))
          .getOrElse(b)
      }
  }

  /**
   * The child, or a copy of it, that produces columnar batches, if it can. Spark inserts no
   * transitions below a ColumnarToRowTransition, so a columnar child gets its own here.
   */
  private def columnar(child: SparkPlan): Option[SparkPlan] = child match {
    // A projection that only drops columns (the features no tree reads, which a source that
    // cannot prune its own columns still returns): the operator reads the columns it needs
    // from the batches below it by name, so it does without.
    case ProjectExec(columns, below) if columns.forall(_.isInstanceOf[Attribute]) => columnar(below)
    case c if c.supportsColumnar => Some(ApplyColumnarRulesAndInsertTransitions(Nil, outputsColumnar = true).apply(c))
    case cache: InMemoryTableScanExec if cachedAsColumns(cache) => Some(cache)
    case stage: TableCacheQueryStageExec if cachedAsColumns(stage.plan) => Some(stage) // the cache under adaptive execution
    case scan: FileSourceScanExec =>
      val unlimited = SessionCopies.withSettings(scan.relation.sparkSession, Map(
        SQLConf.WHOLESTAGE_MAX_NUM_FIELDS.key -> Int.MaxValue.toString,
        SQLConf.WHOLESTAGE_CODEGEN_ENABLED.key -> "true"))
      Some(scan.copy(relation = scan.relation.copy()(unlimited))).filter(_.supportsColumnar)
    case _ => None
  }

  /** A cache scan whose columnar output needs no generated code: only the field limit would stop it. */
  private def cachedAsColumns(plan: SparkPlan): Boolean = plan match {
    case cache: InMemoryTableScanExec =>
      SQLConf.get.cacheVectorizedReaderEnabled &&
        cache.relation.cacheBuilder.serializer.supportsColumnarOutput(cache.relation.schema)
    case _ => false
  }
}
