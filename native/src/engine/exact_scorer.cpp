#include "exact_scorer.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace treescore {
namespace engine {
namespace {

double Sigmoid(double sigmoid, double x) { return 1.0 / (1.0 + std::exp(-sigmoid * x)); }

}  // namespace

ExactScorer::ExactScorer(Forest forest, Layout layout) : forest_(std::make_shared<const Forest>(std::move(forest))) {
  const bool fits = QuickScorer::Fits(*forest_);
  if (layout == Layout::kQuickScorer && !fits) throw std::invalid_argument("a tree has more than 64 leaves");
  if (layout == Layout::kQuickScorer || (layout == Layout::kAuto && fits)) {
    quick_ = std::make_unique<QuickScorer>(forest_);
  } else {
    walker_ = std::make_unique<NodeWalker>(*forest_);
  }
  for (const Tree& tree : forest_->trees) {
    first_leaf_.push_back(leaf_values_.size());
    leaf_values_.insert(leaf_values_.end(), tree.leaf_value.begin(), tree.leaf_value.end());
  }
}

namespace {

// A block's leaves as the node walk found them: leaves[r * num_trees + t].
struct WalkedLeaves {
  const int* leaves;
  size_t num_trees;
  size_t first_tree;
  const double* values;      // every tree's leaf values, tree after tree
  const size_t* first_leaf;  // per tree: where its values start

  int Leaf(int r, size_t t) const { return leaves[static_cast<size_t>(r) * num_trees + t]; }
  double Value(int r, size_t t) const { return values[first_leaf[first_tree + t] + static_cast<size_t>(Leaf(r, t))]; }
};

// A block's leaves as QuickScorer left them: the lowest leaf of each tree's set.
struct QuickLeaves {
  const QuickScorer* quick;
  const uint64_t* sets;
  size_t first_tree;

  int Leaf(int r, size_t t) const {
    return quick->LeafAt(first_tree + t, QuickScorer::ExitPosition(sets, first_tree + t, r));
  }
  double Value(int r, size_t t) const {
    return quick->ValueAt(first_tree + t, QuickScorer::ExitPosition(sets, first_tree + t, r));
  }
};

}  // namespace

template <typename Visit>
void ExactScorer::ForEachBlock(const double* rows, int64_t num_rows, int num_cols, Iterations iterations,
                               Visit visit) const {
  if (num_cols < forest_->num_features) throw std::invalid_argument("rows have fewer columns than the model's features");
  int first = 0, count = 0;
  Range(iterations, &first, &count);
  const size_t first_tree = static_cast<size_t>(first) * forest_->trees_per_iteration;
  const size_t num_trees = static_cast<size_t>(count) * forest_->trees_per_iteration;
  constexpr int kBlock = QuickScorer::kBlock;
  std::vector<double> block(static_cast<size_t>(kBlock) * num_cols);  // the rows as LightGBM reads them
  std::vector<int> leaves(quick_ ? 0 : num_trees * kBlock);
  std::vector<uint64_t> scratch = quick_ ? quick_->NewScratch() : std::vector<uint64_t>();
  for (int64_t r0 = 0; r0 < num_rows; r0 += kBlock) {
    const int n = static_cast<int>(std::min<int64_t>(kBlock, num_rows - r0));
    const double* in = rows + r0 * num_cols;
    for (int64_t i = 0; i < static_cast<int64_t>(n) * num_cols; ++i) block[static_cast<size_t>(i)] = AsLightGbmReadsIt(in[i]);
    if (quick_) {
      quick_->EvaluateBlock(block.data(), n, num_cols, &scratch);
      visit(r0, n, count, QuickLeaves{quick_.get(), scratch.data(), first_tree});
    } else {
      walker_->LeavesOf(block.data(), n, num_cols, first_tree, num_trees, leaves.data());
      visit(r0, n, count, WalkedLeaves{leaves.data(), num_trees, first_tree, leaf_values_.data(), first_leaf_.data()});
    }
  }
}

void ExactScorer::Range(Iterations iterations, int* first, int* count) const {
  const int total = forest_->num_iterations();
  *first = std::min(std::max(iterations.start, 0), total);
  const int remaining = total - *first;
  *count = (iterations.count <= 0 || iterations.count > remaining) ? remaining : iterations.count;
}

int64_t ExactScorer::LeafOutputsPerRow(Iterations iterations) const {
  int first = 0, count = 0;
  Range(iterations, &first, &count);
  return static_cast<int64_t>(count) * forest_->trees_per_iteration;
}

void ExactScorer::PredictRaw(const double* rows, int64_t num_rows, int num_cols, Iterations iterations,
                             double* out) const {
  const int per_iteration = forest_->trees_per_iteration;
  const int classes = forest_->num_classes;
  ForEachBlock(rows, num_rows, num_cols, iterations, [&](int64_t r0, int n, int count, const auto& leaves) {
    // Per class, a left fold in iteration order from 0.0, as LightGBM sums; the block's rows are
    // independent sums, interleaved so that one row's additions do not wait on each other.
    for (int k = 0; k < per_iteration; ++k) {
      double sums[QuickScorer::kBlock] = {};
      for (int i = 0; i < count; ++i) {
        const size_t t = static_cast<size_t>(i) * per_iteration + k;
        for (int r = 0; r < n; ++r) sums[r] += leaves.Value(r, t);
      }
      for (int r = 0; r < n; ++r) out[(r0 + r) * classes + k] = sums[r];
    }
  });
}

void ExactScorer::Transform(double* scores) const {
  switch (forest_->transform) {
    case engine::Transform::kIdentity:
      return;
    case engine::Transform::kSigmoid:
      for (int k = 0; k < forest_->num_classes; ++k) scores[k] = Sigmoid(forest_->sigmoid, scores[k]);
      return;
    case engine::Transform::kLog1pExp:
      scores[0] = std::log1p(std::exp(scores[0]));
      return;
    case engine::Transform::kExp:
      scores[0] = std::exp(scores[0]);
      return;
    case engine::Transform::kSignedSquare: {
      const double x = scores[0];
      const double sign = static_cast<double>((x > 0.0) - (x < 0.0));
      scores[0] = sign * x * x;
      return;
    }
    case engine::Transform::kSoftmax: {
      const int n = forest_->num_classes;
      double largest = scores[0];
      for (int k = 0; k < n; ++k) largest = std::max(scores[k], largest);
      double sum = 0.0;
      for (int k = 0; k < n; ++k) {
        scores[k] = std::exp(scores[k] - largest);
        sum += scores[k];
      }
      for (int k = 0; k < n; ++k) scores[k] /= sum;
      return;
    }
  }
}

void ExactScorer::Predict(const double* rows, int64_t num_rows, int num_cols, Iterations iterations,
                          double* out) const {
  PredictRaw(rows, num_rows, num_cols, iterations, out);
  int first = 0, count = 0;
  Range(iterations, &first, &count);
  const int classes = forest_->num_classes;
  for (int64_t r = 0; r < num_rows; ++r) {
    double* scores = out + r * classes;
    // Random forests average their trees in predictions only, never in raw scores, as LightGBM
    // does; an empty range divides 0 by 0, giving NaN, as there.
    if (forest_->average_output) {
      for (int k = 0; k < classes; ++k) scores[k] /= count;
    }
    Transform(scores);
  }
}

void ExactScorer::PredictLeaf(const double* rows, int64_t num_rows, int num_cols, Iterations iterations,
                              double* out) const {
  const int64_t per_row = LeafOutputsPerRow(iterations);
  ForEachBlock(rows, num_rows, num_cols, iterations, [&](int64_t r0, int n, int, const auto& leaves) {
    for (int r = 0; r < n; ++r) {
      for (int64_t t = 0; t < per_row; ++t) out[(r0 + r) * per_row + t] = leaves.Leaf(r, static_cast<size_t>(t));
    }
  });
}

}  // namespace engine
}  // namespace treescore
