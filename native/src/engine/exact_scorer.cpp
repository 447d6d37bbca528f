#include "exact_scorer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "memory/working_memory.h"
#include "model/decision.h"
#include "model/linear_leaf.h"
#include "wire_limits.h"

namespace treescore {
namespace engine {
namespace {

double Sigmoid(double sigmoid, double x) { return 1.0 / (1.0 + std::exp(-sigmoid * x)); }

}  // namespace

ExactScorer::ExactScorer(model::Forest forest, Layout layout, Simd simd, size_t max_table_addends)
    : forest_(std::make_shared<const model::Forest>(std::move(forest))),
      simd_(simd),
      max_table_addends_(max_table_addends),
      has_linear_trees_(forest_->has_linear_trees()) {
  RequireSimd(simd, BestSimd());
  const bool fits = QuickScorer::Fits(*forest_);
  if (layout == Layout::kQuickScorer && !fits) {
    throw std::invalid_argument("QuickScorer takes trees of at most " + std::to_string(wire::kQuickScorerMostLeaves) +
                                " leaves without NaN thresholds; a tree has more leaves or such a threshold");
  }
  if (layout == Layout::kQuickScorer || (layout == Layout::kAuto && fits)) {
    layout_ = Layout::kQuickScorer;
    quick_ = std::make_unique<QuickScorer>(forest_, simd);
  } else {
    layout_ = Layout::kNodeWalk;
    walker_ = std::make_unique<NodeWalker>(*forest_, simd);
  }
  shap_ = std::make_unique<TreeShap>(*forest_, max_table_addends);
  for (const model::Tree& tree : forest_->trees) {
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
  // Adds to sums[0..lanes) the first `lanes` rows' values in trees t, t + stride, ... (count).
  void AddValues(int lanes, size_t t, int count, int stride, double* sums) const {
    AddRowsByEights(lanes, t, count, stride, sums, [this](int r, size_t tree) { return Value(r, tree); });
  }
};

// A block's leaves as QuickScorer left them: the lowest leaf of each tree's set.
struct QuickLeaves {
  const QuickScorer* quick;
  const uint64_t* sets;
  size_t first_tree;

  int Leaf(int r, size_t t) const {
    return quick->LeafAt(first_tree + t, quick->ExitPosition(sets, first_tree + t, r));
  }
  double Value(int r, size_t t) const {
    return quick->ValueAt(first_tree + t, quick->ExitPosition(sets, first_tree + t, r));
  }
  void AddValues(int lanes, size_t t, int count, int stride, double* sums) const {
    quick->AddExitValues(sets, first_tree + t, count, stride, lanes, sums);
  }
};

// The value linear `tree` gives the block's (block.h) row r at `leaf`.
double LinearValue(const model::Tree& tree, int leaf, const double* block, int r) {
  return model::LinearLeafValue(tree, leaf, [&](int32_t f) { return block[static_cast<size_t>(f) * kBlockRows + r]; });
}

// A block's leaves (WalkedLeaves or QuickLeaves) with each linear tree's value computed from the
// block's rows, as LightGBM computes it (model/linear_leaf.h).
template <typename Leaves>
struct WithLinearLeaves {
  Leaves leaves;
  const model::Forest* forest;
  size_t first_tree;
  const double* block;  // block.h

  int Leaf(int r, size_t t) const { return leaves.Leaf(r, t); }
  double Value(int r, size_t t) const {
    const model::Tree& tree = forest->trees[first_tree + t];
    if (!tree.is_linear()) return leaves.Value(r, t);
    return LinearValue(tree, Leaf(r, t), block, r);
  }
  void AddValues(int lanes, size_t t, int count, int stride, double* sums) const {
    AddRowsByEights(lanes, t, count, stride, sums, [this](int r, size_t tree) { return Value(r, tree); });
  }
};

}  // namespace

void ExactScorer::ReadBlock(model::InputReading reading, const FeatureBatch& rows, const int32_t* picked, int64_t r0, int n,
                            const std::vector<int>& features, double* block) {
  const double nan = std::nan("");
  // Where rows are picked, each picked row's offset into the columns, computed once per block.
  int64_t offsets[kBlockRows] = {};
  if (picked != nullptr) {
    for (int r = 0; r < n; ++r) offsets[r] = (rows.first_row + picked[r0 + r]) * rows.row_stride;
  }
  for (int f : features) {
    double* lanes = block + static_cast<size_t>(f) * kBlockRows;
    if (picked != nullptr) {
      const double* column = rows.columns[f];
      for (int r = 0; r < n; ++r) lanes[r] = model::ReadInput(reading, column[offsets[r]]);
    } else if (rows.row_stride == 1) {
      const double* column = rows.columns[f] + (rows.first_row + r0);
      for (int r = 0; r < n; ++r) lanes[r] = model::ReadInput(reading, column[r]);
    } else {
      const double* column = rows.columns[f] + (rows.first_row + r0) * rows.row_stride;
      for (int r = 0; r < n; ++r) lanes[r] = model::ReadInput(reading, column[static_cast<int64_t>(r) * rows.row_stride]);
    }
    for (int r = n; r < LanesEvaluated(n); ++r) lanes[r] = nan;  // lanes past the rows: evaluated, never read
  }
}

template <typename Visit>
void ExactScorer::ForEachBlock(const FeatureBatch& rows, const int32_t* picked, int64_t num_rows,
                               IterationRange iterations, Visit visit) const {
  if (rows.num_cols < forest_->num_features) throw std::invalid_argument("rows have fewer columns than the model's features");
  int first = 0, count = 0;
  Range(iterations, &first, &count);
  const size_t first_tree = static_cast<size_t>(first) * forest_->trees_per_iteration;
  const size_t num_trees = static_cast<size_t>(count) * forest_->trees_per_iteration;
  std::vector<double> block(static_cast<size_t>(kBlockRows) * rows.num_cols);
  std::vector<int> leaves(quick_ ? 0 : num_trees * kBlockRows);
  std::vector<uint64_t> scratch = quick_ ? quick_->NewScratch() : std::vector<uint64_t>();
  for (int64_t r0 = 0; r0 < num_rows; r0 += kBlockRows) {
    const int n = static_cast<int>(std::min<int64_t>(kBlockRows, num_rows - r0));
    ReadBlock(forest_->input_reading, rows, picked, r0, n, forest_->features_read, block.data());
    const auto deliver = [&](const auto& found) {
      using Found = std::decay_t<decltype(found)>;
      if (has_linear_trees_) {
        visit(r0, n, count, WithLinearLeaves<Found>{found, forest_.get(), first_tree, block.data()});
      } else {
        visit(r0, n, count, found);
      }
    };
    if (quick_) {
      quick_->EvaluateBlock(block.data(), n, &scratch);
      deliver(QuickLeaves{quick_.get(), scratch.data(), first_tree});
    } else {
      walker_->LeavesOf(block.data(), n, first_tree, num_trees, leaves.data());
      deliver(WalkedLeaves{leaves.data(), num_trees, first_tree, leaf_values_.data(), first_leaf_.data()});
    }
  }
}

void ExactScorer::Range(IterationRange iterations, int* first, int* count) const {
  const int total = forest_->num_iterations();
  *first = std::min(std::max(iterations.start_iteration, 0), total);
  const int remaining = total - *first;
  *count = (iterations.num_iterations <= 0 || iterations.num_iterations > remaining) ? remaining : iterations.num_iterations;
}

bool ExactScorer::IsWhole(IterationRange iterations) const {
  int first = 0, count = 0;
  Range(iterations, &first, &count);
  return first == 0 && count == forest_->num_iterations();
}

ExactScorer ExactScorer::Slice(IterationRange iterations) const {
  int first = 0, count = 0;
  Range(iterations, &first, &count);
  const size_t per_iteration = static_cast<size_t>(forest_->trees_per_iteration);
  return ExactScorer(forest_->Slice(static_cast<size_t>(first) * per_iteration, static_cast<size_t>(count) * per_iteration),
                     layout_, simd_, max_table_addends_);
}

int64_t ExactScorer::LeafOutputsPerRow(IterationRange iterations) const {
  int first = 0, count = 0;
  Range(iterations, &first, &count);
  return static_cast<int64_t>(count) * forest_->trees_per_iteration;
}

void ExactScorer::PredictRaw(const FeatureBatch& rows, IterationRange iterations, double* out) const {
  SumRaw(rows, nullptr, rows.num_rows, iterations, false, out);
}

void ExactScorer::AddRaw(const FeatureBatch& rows, const int32_t* picked, int32_t count, IterationRange iterations,
                         double* sums) const {
  if (forest_->num_classes != 1) throw std::invalid_argument("AddRaw needs a single-class model");
  if (picked == nullptr && count != rows.num_rows) throw std::invalid_argument("AddRaw of every row needs their count");
  SumRaw(rows, picked, count, iterations, true, sums);
}

void ExactScorer::SumRaw(const FeatureBatch& rows, const int32_t* picked, int64_t num_rows, IterationRange iterations,
                         bool from_out, double* out) const {
  const int per_iteration = forest_->trees_per_iteration;
  const int classes = forest_->num_classes;
  const double base_score = forest_->base_score;
  ForEachBlock(rows, picked, num_rows, iterations, [&](int64_t r0, int n, int count, const auto& leaves) {
    // Per class, a left fold in iteration order from the base score. The block's rows' sums are
    // independent, and interleaved so that one row's additions do not wait on each other; the
    // lanes past the block's rows are summed too, and dropped.
    const int lanes = LanesEvaluated(n);
    for (int k = 0; k < per_iteration; ++k) {
      double sums[kBlockRows];
      for (int r = 0; r < lanes; ++r) sums[r] = base_score;
      if (from_out) {
        for (int r = 0; r < n; ++r) sums[r] = out[(r0 + r) * classes + k];
      }
      leaves.AddValues(lanes, static_cast<size_t>(k), count, per_iteration, sums);
      for (int r = 0; r < n; ++r) out[(r0 + r) * classes + k] = sums[r];
    }
  });
}

void ExactScorer::ApplyOutputTransform(double* scores) const {
  switch (forest_->transform) {
    case model::OutputTransform::kIdentity:
      return;
    case model::OutputTransform::kSigmoid:
      for (int k = 0; k < forest_->num_classes; ++k) scores[k] = Sigmoid(forest_->sigmoid, scores[k]);
      return;
    case model::OutputTransform::kLog1pExp:
      scores[0] = std::log1p(std::exp(scores[0]));
      return;
    case model::OutputTransform::kExp:
      scores[0] = std::exp(scores[0]);
      return;
    case model::OutputTransform::kSignedSquare: {
      const double x = scores[0];
      const double sign = static_cast<double>((x > 0.0) - (x < 0.0));
      scores[0] = sign * x * x;
      return;
    }
    case model::OutputTransform::kSoftmax: {
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

void ExactScorer::Predict(const FeatureBatch& rows, IterationRange iterations, double* out) const {
  PredictRaw(rows, iterations, out);
  FinishPredictions(out, rows.num_rows, iterations);
}

void ExactScorer::FinishPredictions(double* out, int64_t num_rows, IterationRange iterations) const {
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
    ApplyOutputTransform(scores);
  }
}

void ExactScorer::PredictLeaf(const FeatureBatch& rows, IterationRange iterations, double* out) const {
  const int64_t per_row = LeafOutputsPerRow(iterations);
  ForEachBlock(rows, nullptr, rows.num_rows, iterations, [&](int64_t r0, int n, int, const auto& leaves) {
    for (int r = 0; r < n; ++r) {
      for (int64_t t = 0; t < per_row; ++t) out[(r0 + r) * per_row + t] = leaves.Leaf(r, static_cast<size_t>(t));
    }
  });
}

void ExactScorer::PredictContrib(const FeatureBatch& rows, IterationRange iterations, double* out) const {
  if (has_linear_trees_) {
    throw std::invalid_argument("a model with linear trees has no contributions: LightGBM defines no SHAP values for them");
  }
  int first = 0, count = 0;
  Range(iterations, &first, &count);
  const auto per_iteration = static_cast<size_t>(forest_->trees_per_iteration);
  const int64_t per_row = ContribOutputsPerRow();
  const int num_features = forest_->num_features;
  // Rows a block at a time, each tree over the whole block, so that a tree's tables are read
  // from memory once per block. The block is kept feature by feature, so a tree reads (and adds
  // to) only its own features' runs. On bench/'s 300-tree model 2,000 rows so ran 10% faster
  // than 512 kept row by row; a run of 2,048 rows would put every feature in the same cache set.
  const int block_rows = ContribBlockRows();
  std::vector<double> values(static_cast<size_t>(block_rows) * static_cast<size_t>(num_features));
  TreeShap::Scratch scratch;
  scratch.memo = AddendMemo(static_cast<size_t>(ContribMemoBytes(block_rows)));
  for (int64_t r0 = 0; r0 < rows.num_rows; r0 += block_rows) {
    const int n = static_cast<int>(std::min<int64_t>(block_rows, rows.num_rows - r0));
    for (int32_t f = 0; f < num_features; ++f) {
      for (int r = 0; r < n; ++r) {
        values[static_cast<size_t>(f) * n + r] = model::ReadInput(forest_->input_reading, rows.At(r0 + r, f));
      }
    }
    shap_->Explain(values.data(), n, static_cast<size_t>(first) * per_iteration, static_cast<size_t>(count) * per_iteration,
                   &scratch, out + r0 * per_row);
  }
}

int64_t ExactScorer::ContribRowBytes() const {
  return (ContribOutputsPerRow() + forest_->num_features) * static_cast<int64_t>(sizeof(double));
}

int ExactScorer::ContribBlockRows() const {
  // Blocks of values and contributions stay within memory::kShapBlockMostBytes (1,300 rows of a
  // 200-feature model), and at least 64 rows, which a model of thousands of features per class
  // exceeds (WorkingShares counts it).
  return static_cast<int>(std::max<int64_t>(64, std::min<int64_t>(2000, memory::kShapBlockMostBytes / ContribRowBytes())));
}

int64_t ExactScorer::ContribMemoBytes(int block_rows) const {
  // The memo of replayed leaves gets the rest of TreeSHAP's share of the slot's working memory.
  return std::max(memory::kShapBytes - block_rows * ContribRowBytes(), static_cast<int64_t>(AddendMemo::kDefaultBytes));
}

memory::Shares ExactScorer::WorkingShares() const {
  constexpr auto kDouble = static_cast<int64_t>(sizeof(double));
  const auto features = static_cast<int64_t>(forest_->num_features);
  const auto trees = static_cast<int64_t>(forest_->trees.size());
  const int64_t copy = memory::CopyBytes(features);
  // The engine's scratch is most for a grid (PredictGridRaw): a block of rows, its feature lists,
  // and per tree a value per block row, its index in one of two growing lists (up to three times
  // its size while one grows), and QuickScorer's base and point sets or the walk's leaf per block
  // row. A few kilobytes more cover the allocations' headers and small vectors.
  constexpr int64_t kSmallBytes = 4096;
  const int64_t per_tree = kBlockRows * kDouble + 3 * static_cast<int64_t>(sizeof(size_t)) +
                           (quick_ ? 2 * quick_->SetBytesPerTree() : kBlockRows * static_cast<int64_t>(sizeof(int)));
  const int64_t block = features * (kBlockRows * kDouble + static_cast<int64_t>(sizeof(int)));
  const TreeShap::ScratchNeeds shap_needs = shap_->MostScratchNeeds();
  const int64_t scratch = std::max(block + trees * per_tree, shap_needs.pass_bytes) + kSmallBytes;
  // TreeSHAP's block and memo: the memo holds its room, and where one pass's replayed addends
  // may outgrow the part its values get (more than half), their storage as well while the
  // room's is given back (AddendMemo::Reserve).
  const int block_rows = ContribBlockRows();
  const int64_t memo_room = ContribMemoBytes(block_rows);
  const int64_t pass_addends = shap_needs.pass_addends * kDouble;
  const int64_t memo = pass_addends <= memo_room / 2 ? memo_room : memo_room + pass_addends;
  const int64_t shap = block_rows * ContribRowBytes() + memo;
  memory::Shares shares;
  shares.copy = copy;
  shares.scratch = std::max(memory::kScratchBytes, scratch);
  shares.shap = std::max(memory::kShapBytes, shap);
  return shares;
}

void ExactScorer::PredictGridRaw(const FeatureBatch& rows, const GridPoints& grid, IterationRange iterations,
                                 double* out) const {
  const int num_cols = rows.num_cols;
  if (num_cols < forest_->num_features) throw std::invalid_argument("rows have fewer columns than the model's features");
  int first = 0, count = 0;
  Range(iterations, &first, &count);
  const size_t first_tree = static_cast<size_t>(first) * forest_->trees_per_iteration;
  const size_t num_trees = static_cast<size_t>(count) * forest_->trees_per_iteration;
  const size_t num_varying = grid.varying.size();
  // The request's trees split by whether any node reads a varying feature (absolute indices).
  std::vector<bool> varies(static_cast<size_t>(num_cols));
  for (int32_t f : grid.varying) varies[static_cast<size_t>(f)] = true;
  std::vector<size_t> fixed_trees, varying_trees;
  for (size_t t = first_tree; t < first_tree + num_trees; ++t) {
    bool reads = false;
    forest_->trees[t].ForEachFeatureRead([&](int f) { reads = reads || varies[static_cast<size_t>(f)]; });
    (reads ? varying_trees : fixed_trees).push_back(t);
  }
  std::vector<int> fixed_features, varying_features;
  for (int f : forest_->features_read) (varies[static_cast<size_t>(f)] ? varying_features : fixed_features).push_back(f);
  constexpr int kBlock = kBlockRows;
  std::vector<double> block(static_cast<size_t>(kBlock) * num_cols);  // the base rows, then each point (block.h)
  // values[t * kBlock + r]: row r's leaf value in the request's tree t. The fixed trees' values
  // are written once per block, the varying trees' once per point.
  std::vector<double> values(num_trees * kBlock);
  std::vector<uint64_t> base_sets = quick_ ? quick_->NewScratch() : std::vector<uint64_t>();
  std::vector<uint64_t> point_sets = quick_ ? quick_->NewScratch() : std::vector<uint64_t>();
  std::vector<int> leaves(quick_ ? 0 : std::max(fixed_trees.size(), varying_trees.size()) * kBlock);
  // Each listed tree's leaf value for the block's n rows, from QuickScorer's sets or a walk; a
  // linear tree's from the block's values too.
  const auto take_values = [&](const std::vector<size_t>& trees, const uint64_t* sets, int n) {
    double* target = values.data();
    if (quick_) {
      for (size_t t : trees) {
        const bool linear = forest_->trees[t].is_linear();
        for (int r = 0; r < n; ++r) {
          const int position = quick_->ExitPosition(sets, t, r);
          target[(t - first_tree) * kBlock + static_cast<size_t>(r)] =
              linear ? LinearValue(forest_->trees[t], quick_->LeafAt(t, position), block.data(), r) : quick_->ValueAt(t, position);
        }
      }
      return;
    }
    walker_->LeavesOfTrees(block.data(), n, trees.data(), trees.size(), leaves.data());
    for (size_t i = 0; i < trees.size(); ++i) {
      const bool linear = forest_->trees[trees[i]].is_linear();
      for (int r = 0; r < n; ++r) {
        const int leaf = leaves[static_cast<size_t>(r) * trees.size() + i];
        target[(trees[i] - first_tree) * kBlock + static_cast<size_t>(r)] =
            linear ? LinearValue(forest_->trees[trees[i]], leaf, block.data(), r)
                   : leaf_values_[first_leaf_[trees[i]] + static_cast<size_t>(leaf)];
      }
    }
  };
  const int classes = forest_->num_classes;
  const int64_t stride = static_cast<int64_t>(grid.points) * classes;  // from one base row's outputs to the next's
  for (int64_t r0 = 0; r0 < rows.num_rows; r0 += kBlock) {
    const int n = static_cast<int>(std::min<int64_t>(kBlock, rows.num_rows - r0));
    ReadBlock(forest_->input_reading, rows, nullptr, r0, n, forest_->features_read, block.data());
    if (quick_) {
      quick_->ResetSets(n, base_sets.data());
      quick_->ApplyFeatures(block.data(), n, fixed_features.data(), fixed_features.size(), base_sets.data());
    }
    take_values(fixed_trees, base_sets.data(), n);
    for (int k = 0; k < grid.points; ++k) {
      for (int r = 0; r < n; ++r) {
        const double* point = grid.values + (static_cast<size_t>(r0 + r) * grid.points + static_cast<size_t>(k)) * num_varying;
        for (size_t v = 0; v < num_varying; ++v) {
          block[static_cast<size_t>(grid.varying[v]) * kBlock + static_cast<size_t>(r)] = model::ReadInput(forest_->input_reading, point[v]);
        }
      }
      if (quick_) {
        // Only trees that read a varying feature change from the base sets; the others are never read.
        for (size_t t : varying_trees) quick_->CopyTreeSets(base_sets.data(), t, point_sets.data());
        quick_->ApplyFeatures(block.data(), n, varying_features.data(), varying_features.size(), point_sets.data());
      }
      take_values(varying_trees, point_sets.data(), n);
      SumBlock(values.data(), n, count, out + r0 * stride + static_cast<int64_t>(k) * classes, stride);
    }
  }
}

void ExactScorer::SumBlock(const double* values, int n, int count, double* out, int64_t stride) const {
  constexpr int kBlock = kBlockRows;
  const int per_iteration = forest_->trees_per_iteration;
  for (int c = 0; c < per_iteration; ++c) {
    // As PredictRaw sums: per class a left fold in iteration order from the base score, rows side by side.
    double sums[kBlock];
    for (int r = 0; r < kBlock; ++r) sums[r] = forest_->base_score;
    for (int i = 0; i < count; ++i) {
      const double* tree = values + (static_cast<size_t>(i) * per_iteration + static_cast<size_t>(c)) * kBlock;
      for (int r = 0; r < kBlock; ++r) sums[r] += tree[r];
    }
    for (int r = 0; r < n; ++r) out[r * stride + c] = sums[r];
  }
}

void ExactScorer::PredictGrid(const FeatureBatch& rows, const GridPoints& grid, IterationRange iterations,
                              double* out) const {
  PredictGridRaw(rows, grid, iterations, out);
  FinishPredictions(out, static_cast<int64_t>(rows.num_rows) * grid.points, iterations);
}

}  // namespace engine
}  // namespace treescore
