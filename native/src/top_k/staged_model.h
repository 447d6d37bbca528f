// One model as top-K selection scores it: its trees cut into stages, each a forest of its own,
// with bounds on what the trees after each stage can still add (engine/rest_bounds.h).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/exact_scorer.h"
#include "engine/rest_bounds.h"
#include "rows/feature_batch.h"

namespace treescore {

class StagedModel {
 public:
  // The output of `model` (its raw margin when `raw`, else its prediction) over `iterations`,
  // reading batch column columns[f] for feature f (empty: column f), in stages of
  // trees_per_stage trees (<= 0: a fifth of them, at least 10). `model` must outlive this.
  // Throws std::invalid_argument for a model with more than one output per row or bad columns.
  StagedModel(const engine::ExactScorer& model, bool raw, model::IterationRange iterations, std::vector<int32_t> columns,
              int trees_per_stage);

  size_t num_stages() const { return stages_.size(); }
  int stage_trees(size_t stage) const { return stage_trees_[stage]; }
  const engine::RestBounds& rest() const { return rest_; }
  // The batch column of each feature the rest bounds condition on, in their order.
  const std::vector<int32_t>& bin_columns() const { return bin_columns_; }
  // The batch column feature f reads.
  int32_t Column(int f) const { return columns_.empty() ? f : columns_[static_cast<size_t>(f)]; }
  int num_features() const { return model_->forest().num_features; }
  // Where every row's raw sum starts.
  double base_score() const { return model_->forest().base_score; }
  // Whether `holds` is true of every leaf value of its trees.
  bool EveryLeaf(bool (*holds)(double)) const;
  // Marks read[c] for every batch column some tree of its reads (growing `read` as needed).
  void MarkColumnsRead(std::vector<bool>* read) const;

  // Adds stage `stage`'s trees to the running sums of `count` rows of `rows` (`picked` lists
  // them; nullptr: the first count rows). `columns` is scratch for the model's view of `rows`.
  void AddStage(size_t stage, const FeatureBatch& rows, const int32_t* picked, int32_t count, double* sums,
                std::vector<const double*>* columns) const;
  // Its output from a raw sum of all its trees.
  double Output(double raw) const;
  // At least (upper) or at most (lower) any output a row can end with whose raw sum after
  // `done` stages is `sum`, given the row's bins for the rest bounds (nullptr: any row's).
  double Bound(double sum, size_t done, const uint16_t* bins, bool upper) const;

 private:
  const engine::ExactScorer* model_;
  bool raw_;
  model::IterationRange iterations_;
  std::vector<int32_t> columns_;
  std::vector<engine::ExactScorer> stages_;  // consecutive runs of the model's trees
  std::vector<int> stage_trees_;
  engine::RestBounds rest_;
  std::vector<int32_t> bin_columns_;
};

}  // namespace treescore
