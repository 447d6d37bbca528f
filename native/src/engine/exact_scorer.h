// treescore's exact evaluator: scores a dense row-major batch the way LightGBM's predictor does,
// bit for bit, without LightGBM. Each row's leaves come from one of two layouts (QuickScorer or
// the node walk), a linear leaf's value from the row's values, its trees are summed per class as
// a left fold in iteration order, and the output transform is applied last through the same libm.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rows/feature_batch.h"
#include "block.h"
#include "memory/working_memory.h"
#include "model/forest.h"
#include "node_walker.h"
#include "quick_scorer.h"
#include "simd.h"
#include "tree_shap.h"

namespace treescore {
namespace engine {

using model::IterationRange;

// How the trees are evaluated; every layout gives the same bits.
enum class Layout {
  kAuto,         // QuickScorer where every tree has at most 64 leaves, the node walk otherwise
  kNodeWalk,     // each row walks each tree from the root
  kQuickScorer,  // per-feature threshold scans over leaf bitsets (trees of at most 64 leaves)
};

class ExactScorer {
 public:
  // simd: the instruction set the layout runs on (simd.h), the CPU's best unless a test asks for
  // another; every one gives the same bits. A level the CPU lacks is refused. The TreeSHAP
  // tables keep at most max_table_addends addends (TreeShap's constructor), a slice's too.
  ExactScorer(model::Forest forest, Layout layout, Simd simd = BestSimd(),
              size_t max_table_addends = TreeShap::kMaxTableAddends);

  const model::Forest& forest() const { return *forest_; }
  // The layout in use: "quickscorer" or "node walk".
  std::string layout_name() const { return quick_ ? "quickscorer" : "node walk"; }
  // QuickScorer's leaf sets, 32 or 64 bits; 0 for the node walk.
  int leaf_set_bits() const { return quick_ ? quick_->leaf_set_bits() : 0; }
  // The SIMD level the scorer was built for, as simd.h names it (the node walk's vector code is
  // AVX-512 only; on the other levels it walks row by row).
  std::string simd_name() const { return SimdName(simd_); }

  // Doubles written per row: num_classes for raw and prediction, one leaf index per used tree for leaf.
  int64_t RawOutputsPerRow() const { return forest_->num_classes; }
  int64_t LeafOutputsPerRow(IterationRange iterations) const;

  // rows: any FeatureBatch layout (rows/feature_batch.h); NaN is missing. out: num_rows x outputs.
  void PredictRaw(const FeatureBatch& rows, IterationRange iterations, double* out) const;
  void Predict(const FeatureBatch& rows, IterationRange iterations, double* out) const;
  void PredictLeaf(const FeatureBatch& rows, IterationRange iterations, double* out) const;
  // TreeSHAP contributions, LightGBM's bits (tree_shap.h): num_classes x (num_features + 1) per row.
  int64_t ContribOutputsPerRow() const { return shap_->OutputsPerRow(); }
  void PredictContrib(const FeatureBatch& rows, IterationRange iterations, double* out) const;
  TreeShap::TableStats ShapTableStats() const { return shap_->Stats(); }
  // Bytes built since the scorer was: its TreeSHAP tables, once contributions were asked.
  int64_t built_bytes() const { return shap_->built_bytes(); }

  // The most native memory one call on one thread holds that does not grow with its rows: each
  // share of a task slot's working memory (memory/working_memory.h) as this model needs it, or
  // the share where that is more. Past TaskWorkingMemoryBytes only for models the shares do not
  // fit: thousands of trees, trees of thousands of leaves, or thousands of features per class.
  memory::Shares WorkingShares() const;

  // The [first, first + count) iterations a request uses, clamped as LightGBM clamps them.
  void Range(IterationRange iterations, int* first, int* count) const;
  // Whether a request's iterations are every iteration of the forest.
  bool IsWhole(IterationRange iterations) const;
  // A scorer over the iterations' trees alone, in the same layout: its whole forest gives the
  // bits this one gives for the range (the same trees, summed in the same order), without
  // evaluating the trees outside it, which QuickScorer otherwise does for a block at once.
  ExactScorer Slice(IterationRange iterations) const;

  // For a single-class model: adds the iterations' leaf values to the running sums of the
  // batch's rows picked[0], ..., picked[count - 1] (every row in order where picked is null),
  // sums[i] being picked row i's, continuing its left fold: scoring trees [0, a) and then
  // [a, b) this way gives the bits PredictRaw gives for [0, b). Top-K selection scores its
  // stages so, reading only the rows still in the running.
  void AddRaw(const FeatureBatch& rows, const int32_t* picked, int32_t count, IterationRange iterations, double* sums) const;

  // Turns num_rows rows of raw scores into predictions for the given iterations: averages
  // (random forests), then transforms, as Predict does after summing.
  void FinishPredictions(double* out, int64_t num_rows, IterationRange iterations) const;

  // A what-if grid (GridPoints, rows/feature_batch.h) over the batch's base rows: out gets num_rows *
  // grid.points rows of num_classes doubles, each the bits PredictRaw or Predict gives for that
  // point's row. The nodes on features that do not vary run once per base row, and so do the
  // trees that read no varying feature; per point only the nodes on varying features run, and
  // every tree's leaf value is summed again in iteration order, as scoring the point alone sums.
  void PredictGridRaw(const FeatureBatch& rows, const GridPoints& grid, IterationRange iterations, double* out) const;
  void PredictGrid(const FeatureBatch& rows, const GridPoints& grid, IterationRange iterations, double* out) const;

 private:
  void ApplyOutputTransform(double* scores) const;
  // PredictContrib's rows per block, and the room its memo gets beside them.
  int64_t ContribRowBytes() const;
  int ContribBlockRows() const;
  int64_t ContribMemoBytes(int block_rows) const;
  // PredictRaw, or AddRaw where from_out: each sum starts at out's value instead of 0.0.
  void SumRaw(const FeatureBatch& rows, const int32_t* picked, int64_t num_rows, IterationRange iterations, bool from_out,
              double* out) const;
  // PredictRaw's sums for a block of n rows whose leaf values are values[t * kBlock + r], t
  // counting the request's trees; row r's scores go to out + r * stride.
  void SumBlock(const double* values, int n, int count, double* out, int64_t stride) const;
  // Calls visit(first_row, n, count, leaves) for each block of at most kBlockRows rows, where
  // leaves.Leaf(r, t) and leaves.Value(r, t) are the leaf (index and value) the block's row r
  // reaches in the request's tree t, over the `count` iterations it uses (for r below
  // LanesEvaluated(n), the lanes past the rows giving leaves no one reads). The rows are the
  // batch's, or where `picked` is not null the num_rows rows it lists (first_row counting those).
  template <typename Visit>
  void ForEachBlock(const FeatureBatch& rows, const int32_t* picked, int64_t num_rows, IterationRange iterations,
                    Visit visit) const;
  // Copies rows [r0, r0 + n) of the batch's `features` into `block` (block.h), read as LightGBM
  // reads them; where `picked` is not null, the rows picked[r0], ..., picked[r0 + n - 1].
  static void ReadBlock(model::InputReading reading, const FeatureBatch& rows, const int32_t* picked, int64_t r0, int n,
                        const std::vector<int>& features, double* block);

  std::shared_ptr<const model::Forest> forest_;
  Layout layout_;                        // the one in use: kQuickScorer or kNodeWalk
  Simd simd_;
  size_t max_table_addends_;
  bool has_linear_trees_;  // whether some leaf's value depends on the row (model/linear_leaf.h)
  std::unique_ptr<QuickScorer> quick_;   // one of the two layouts
  std::unique_ptr<NodeWalker> walker_;
  std::unique_ptr<TreeShap> shap_;
  // Every tree's leaf values in one array, tree after tree, so summing reads no tree structure.
  std::vector<double> leaf_values_;
  std::vector<size_t> first_leaf_;  // per tree: where its values start in leaf_values_
};

}  // namespace engine
}  // namespace treescore
