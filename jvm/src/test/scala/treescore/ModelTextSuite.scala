package treescore

import org.scalatest.funsuite.AnyFunSuite

import treescore.model.{InvalidModelException, TreeModel}

/** Structural checks that keep damaged model text away from LightGBM's unhardened parser. */
class ModelTextSuite extends AnyFunSuite {

  private lazy val good: String = {
    val source = scala.io.Source.fromResource("fixtures/regression.txt")
    try source.mkString finally source.close()
  }

  private def problem(text: String): String =
    intercept[InvalidModelException](TreeModel.fromString(text)).problem

  test("a good model is read with its metadata") {
    val model = TreeModel.fromString(good)
    assert(model.featureNames == Seq("f0", "f1", "f2", "f3", "f4", "f5"))
    assert(model.numFeatures == 6 && model.numClasses == 1 && model.numTrees == 30)
    assert(model.objective.contains("regression"))
    assert(model.contentHash.length == 64)
    assert(model == TreeModel.fromString(new String(good)))
  }

  test("the features a model reads: those its trees split on and those its linear leaves read") {
    val model = TreeModel.fromString(good)
    assert((0 until 6).filter(model.readsFeature) == Seq(0, 1, 2, 3))
    val source = scala.io.Source.fromResource("fixtures/linear.txt")
    val linear = try source.mkString finally source.close()
    assert((0 until 6).filter(TreeModel.fromString(linear).readsFeature) == Seq(0, 1))
    // A leaf's linear model that reads f4, which no tree splits on (the same length, so tree_sizes holds).
    val readsF4 = linear.replaceFirst("leaf_features=0 1 ", "leaf_features=0 4 ")
    assert(readsF4 != linear)
    assert((0 until 6).filter(TreeModel.fromString(readsF4).readsFeature) == Seq(0, 1, 4))
  }

  /** One categorical split whose bitset words are `words` (categories 31 and 63 go left). */
  private def categorical(words: String): String =
    Seq("tree", "version=v4", "num_class=1", "num_tree_per_iteration=1", "label_index=0", "max_feature_idx=0",
      "objective=regression", "feature_names=c", "feature_infos=0:31:63", "", "Tree=0", "num_leaves=2", "num_cat=1",
      "split_feature=0", "split_gain=1", "threshold=0", "decision_type=1", "left_child=-1", "right_child=-2",
      "leaf_value=1 2", "leaf_weight=1 1", "leaf_count=1 1", "internal_value=0", "internal_weight=0",
      "internal_count=2", "cat_boundaries=0 2", s"cat_threshold=$words", "is_linear=0", "shrinkage=1", "", "",
      "end of trees", "", "parameters:", "end of parameters", "").mkString("\n")

  test("cat_threshold words are unsigned 32-bit: a word with bit 31 set is valid") {
    assert(TreeModel.fromString(categorical("2147483648 2147483648")).categoricalFeatures == Seq("c"))
    assert(TreeModel.fromString(categorical("4294967295 0")).numTrees == 1)
    assert(problem(categorical("4294967296 0")) ==
      "tree 0 has '4294967296' in cat_threshold, which is not an unsigned 32-bit integer")
    assert(problem(categorical("-1 0")) == "tree 0 has '-1' in cat_threshold, which is not an unsigned 32-bit integer")
  }

  test("monotone_constraints are -1, 0 or 1, one per feature") {
    val withConstraints = good.replaceFirst("feature_infos=", "monotone_constraints=1 -1 0 0 1 0\nfeature_infos=")
    assert(TreeModel.fromString(withConstraints).numFeatures == 6)
    val wrong = good.replaceFirst("feature_infos=", "monotone_constraints=1 -1 0 0 2 0\nfeature_infos=")
    assert(problem(wrong) == "monotone_constraints has '2', expected -1, 0 or 1")
  }

  test("empty text") {
    assert(problem("") == "the text is empty")
  }

  test("text cut anywhere before its last section ends is rejected, never passed on") {
    val complete = good.indexOf("end of parameters") + "end of parameters".length
    val cuts = (1 until complete by 97) ++ Seq(good.indexOf("end of trees") + 5, good.indexOf("Tree=3") + 2,
      good.indexOf("feature_importances:") + 25, good.indexOf("parameters:") + 30)
    cuts.foreach { cut =>
      intercept[InvalidModelException](TreeModel.fromString(good.take(cut)))
    }
  }

  test("a truncated tree section names the missing end marker or the cut tree") {
    val cut = good.take(good.indexOf("Tree=29") + 200)
    assert(problem(cut).contains("tree 29"), problem(cut))
  }

  test("tree_sizes that disagree with the trees") {
    val damaged = good.replaceFirst("tree_sizes=1413 ", "tree_sizes=1414 ")
    assert(problem(damaged) == "tree 0 takes 1413 bytes but tree_sizes says 1414 (the text is damaged)")
  }

  test("a child index out of range") {
    val damaged = good.replaceFirst("left_child=2 3 11", "left_child=2 3 99")
    assert(problem(damaged) == "tree 0 node 2 has child 99, outside 0..13")
  }

  test("a cycle in a tree") {
    val damaged = good.replaceFirst("left_child=2 3 11", "left_child=2 3 0")
    assert(problem(damaged).startsWith("tree 0 reaches node 0 twice"), problem(damaged))
  }

  test("a split on a feature the model does not have") {
    val damaged = good.replaceFirst("split_feature=0 0 0 1", "split_feature=0 0 0 9")
    assert(problem(damaged) == "tree 0 node 3 splits on feature 9, outside 0..5")
  }

  test("an array shorter than num_leaves requires") {
    val damaged = good.replaceFirst("num_leaves=15", "num_leaves=16")
    assert(problem(damaged) == "tree 0 has 15 values in leaf_value, expected 16")
  }

  test("a number that does not parse") {
    val damaged = good.replaceFirst("threshold=-0.29838196003679329", "threshold=-0.29x38196003679329")
    assert(problem(damaged) == "tree 0 threshold has '-0.29x38196003679329', which is not a number")
  }

  test("feature_names that disagree with max_feature_idx") {
    val damaged = good.replaceFirst("feature_names=f0 f1 f2 f3 f4 f5", "feature_names=f0 f1 f2 f3 f4")
    assert(problem(damaged) == "feature_names lists 5 names but max_feature_idx=5 needs 6")
  }

  test("the message names the source") {
    val e = intercept[InvalidModelException](TreeModel.fromString("hello"))
    assert(e.getMessage == "treescore: the model text is not a valid LightGBM text model: it does not start with the line 'tree'")
  }
}
