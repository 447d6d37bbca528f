package treescore

import org.apache.spark.sql.catalyst.expressions.BoundReference
import org.apache.spark.sql.types.DoubleType
import org.scalatest.funsuite.AnyFunSuite

import treescore.ensemble.{EnsembleScorer, Member, ModelScorer}
import treescore.execution.{FeatureMatrices, ModelTaskScorer, ProgramTaskScorer, TaskScorers}
import treescore.expressions.{ProgramScoreExpression, ScoreExpression}
import treescore.model.{Engine, TreeModel}
import treescore.nativelib.ModelCache

/**
 * A task scorer whose construction fails part way returns every lease it took and frees what
 * it allocated: a leaked lease would pin its cache entry for the life of the executor. The
 * failure is injected as a buffer size the allocator refuses (a negative row count), which
 * happens after the leases (and, for programs, the compiled program) are taken.
 */
class TaskScorerCleanupSuite extends AnyFunSuite {
  private def fixture(name: String): TreeModel = {
    val source = scala.io.Source.fromResource(s"fixtures/$name.txt")
    try TreeModel.fromString(source.mkString) finally source.close()
  }

  private lazy val regression = fixture("regression")
  private lazy val binary = fixture("binary")
  private def columns(n: Int) = (0 until n).map(i => BoundReference(i, DoubleType, nullable = true))

  test("a model scorer that fails after taking its lease returns the lease") {
    val call = ScoreExpression(regression, columns(regression.numFeatures), ScoreOptions.Default, TaskScorers)
    val before = ModelCache.leasesHeld
    val broken = new FeatureMatrices(Nil, -1)
    val error = intercept[IllegalArgumentException](ModelTaskScorer.open(call, Engine.Treescore, broken, batchRows = -1, 1, Map.empty))
    assert(error.getMessage.contains("capacity must be non-negative"))
    assert(ModelCache.leasesHeld == before)
    broken.close()
    val matrices = new FeatureMatrices(Nil, 4)
    ModelTaskScorer.open(call, Engine.Treescore, matrices, batchRows = 4, 1, Map.empty).close() // and the model is still usable
    matrices.close()
    assert(ModelCache.leasesHeld == before)
  }

  test("a program scorer that fails after compiling its program returns every lease") {
    val ensemble = EnsembleScorer(Seq(Member(ModelScorer(regression), 0.5), Member(ModelScorer(binary), 0.5)))
    val call = ProgramScoreExpression(ensemble, ensemble.featureInputs, ensemble.keyInputs, None,
      columns(ensemble.featureInputs.length), TaskScorers)
    val before = ModelCache.leasesHeld
    intercept[IllegalArgumentException](ProgramTaskScorer.open(call, Engine.Treescore, Nil, batchRows = -1, 1, Map.empty))
    assert(ModelCache.leasesHeld == before)
    ProgramTaskScorer.open(call, Engine.Treescore, Nil, batchRows = 4, 1, Map.empty).close()
    assert(ModelCache.leasesHeld == before)
  }
}
