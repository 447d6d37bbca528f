#include "top_k/staged_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "top_k/widen.h"

namespace treescore {
namespace {

// Twice the unit roundoff of a double: one addition's relative error is at most half of it.
constexpr double kRoundoff = std::numeric_limits<double>::epsilon();

// Stages of a fifth of the trees, at least 10 each. Each stage a row takes costs a fixed part
// (its features read and scanned once per stage, whatever the stage's size) on top of its
// trees, so fewer, longer stages win until rows stay in too long: measured on bench/'s 300-tree
// model, fifths beat tenths and quarters.
int DefaultTreesPerStage(int num_trees) { return std::max(10, (num_trees + 4) / 5); }

}  // namespace

StagedModel::StagedModel(const engine::ExactScorer& model, bool raw, model::IterationRange iterations,
                         std::vector<int32_t> columns, int trees_per_stage)
    : model_(&model), raw_(raw), iterations_(iterations), columns_(std::move(columns)) {
  const model::Forest& forest = model.forest();
  if (forest.num_classes != 1) {
    throw std::invalid_argument("top-K selection needs models with one output per row, not " +
                                std::to_string(forest.num_classes));
  }
  if (forest.has_linear_trees()) {
    throw std::invalid_argument("top-K selection bounds trees by their leaf values, and a linear tree's leaves have no "
                                "such bound; score a model with linear trees in full");
  }
  if (!columns_.empty() && static_cast<int>(columns_.size()) != forest.num_features) {
    throw std::invalid_argument("a top-K member reads " + std::to_string(columns_.size()) + " columns for " +
                                std::to_string(forest.num_features) + " features");
  }
  for (int32_t c : columns_) {
    if (c < 0) throw std::invalid_argument("negative top-K column " + std::to_string(c));
  }
  int first = 0, count = 0;
  model.Range(iterations_, &first, &count);
  const int num_trees = count * forest.trees_per_iteration;
  const int per_stage = trees_per_stage > 0 ? trees_per_stage : DefaultTreesPerStage(num_trees);
  const size_t query_tree = static_cast<size_t>(first) * forest.trees_per_iteration;  // the query's first tree
  // Each stage is a forest of its own over a run of the trees, so that a stage evaluates only
  // its trees (QuickScorer otherwise evaluates every tree of a block at once). There is always
  // one stage, empty for an empty range.
  int begin = 0;
  do {
    const int end = std::min(num_trees, begin + per_stage);
    stages_.emplace_back(forest.Slice(query_tree + static_cast<size_t>(begin), static_cast<size_t>(end - begin)),
                         engine::Layout::kAuto);
    stage_trees_.push_back(end - begin);
    begin = end;
  } while (begin < num_trees);
  std::vector<const model::Tree*> trees;
  for (const engine::ExactScorer& stage : stages_) {
    for (const model::Tree& tree : stage.forest().trees) trees.push_back(&tree);
  }
  rest_ = engine::RestBounds(forest.input_reading, trees, stage_trees_);
  for (int f : rest_.features()) bin_columns_.push_back(Column(f));
}

bool StagedModel::EveryLeaf(bool (*holds)(double)) const {
  for (const engine::ExactScorer& stage : stages_) {
    for (const model::Tree& tree : stage.forest().trees) {
      if (!std::all_of(tree.leaf_value.begin(), tree.leaf_value.end(), holds)) return false;
    }
  }
  return true;
}

void StagedModel::MarkColumnsRead(std::vector<bool>* read) const {
  for (const engine::ExactScorer& stage : stages_) {
    for (int f : stage.forest().features_read) {
      const auto c = static_cast<size_t>(Column(f));
      if (c >= read->size()) read->resize(c + 1);
      (*read)[c] = true;
    }
  }
}

void StagedModel::AddStage(size_t stage, const FeatureBatch& rows, const int32_t* picked, int32_t count, double* sums,
                           std::vector<const double*>* columns) const {
  const FeatureBatch view = columns_.empty() ? rows : rows.Columns(columns_, columns);
  stages_[stage].AddRaw(view, picked, count, model::IterationRange{}, sums);
}

double StagedModel::Output(double raw) const {
  if (raw_) return raw;
  model_->FinishPredictions(&raw, 1, iterations_);
  return raw;
}

double StagedModel::Bound(double sum, size_t done, const uint16_t* bins, bool upper) const {
  // The remaining additions are at most Trees() roundings of values no larger in magnitude
  // than |sum| + Magnitude(); summing the rest bound and adding it rounds as often again.
  const double error = (2.0 * rest_.Trees(done) + 4.0) * kRoundoff * (std::fabs(sum) + rest_.Magnitude(done));
  const double raw = upper ? sum + rest_.Upper(done, bins) + error : sum + rest_.Lower(done, bins) - error;
  return WidenedPastTransform(Output(raw), upper);
}

}  // namespace treescore
