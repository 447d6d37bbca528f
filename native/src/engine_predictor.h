// treescore's exact engine behind the Predictor interface, so the JNI layer and ensemble
// programs use it exactly as they use LightGBM's predictor.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/exact_scorer.h"
#include "predictor.h"

namespace treescore {

class EnginePredictor final : public Predictor {
 public:
  // Parses the model text; throws std::invalid_argument on a model the engine cannot evaluate.
  // Its TreeSHAP tables keep at most max_table_addends addends (engine::TreeShap).
  static EnginePredictor FromModelText(const std::string& model_text, engine::Layout layout = engine::Layout::kAuto,
                                       engine::Simd simd = engine::BestSimd(),
                                       size_t max_table_addends = engine::TreeShap::kMaxTableAddends);

  int num_features() const override { return scorer_.forest().num_features; }
  int num_classes() const override { return scorer_.forest().num_classes; }
  Engine engine() const override { return Engine::kTreescore; }
  const engine::ExactScorer& scorer() const { return scorer_; }
  // The slices of iteration ranges and the TreeSHAP tables, of the model and its slices.
  int64_t built_bytes() const override;
  // The whole model's: a slice's trees are some of them.
  int64_t WorkingBytes() const override { return scorer_.WorkingShares().total(); }

  // Raw and prediction give num_classes doubles per row, leaf one per used tree, contributions
  // num_classes x (num_features + 1).
  int64_t OutputsPerRow(PredictKind kind, IterationRange range) const override;

  // Rows are split into num_threads contiguous parts scored side by side; every row's result
  // is computed on one thread alone, so the thread count never changes a bit.
  void Predict(const FeatureBatch& rows, PredictKind kind, IterationRange range, int num_threads, double* out,
               int64_t out_capacity) const override;

  // Raw scores and predictions share the work on features that do not vary across a row's
  // points (engine::ExactScorer::PredictGrid); leaf indices take the default, one row per point. Base
  // rows are split between threads as Predict splits rows, with the same bits.
  void PredictGrid(const FeatureBatch& base_rows, const GridPoints& grid, PredictKind kind, IterationRange range,
                   int num_threads, double* out, int64_t out_capacity) const override;
  using Predictor::Predict;
  using Predictor::PredictGrid;

 private:
  // Scorers over part of the forest, built on first use, so that a request for some iterations
  // evaluates only their trees: QuickScorer evaluates every tree of its forest for a block.
  struct Slices {
    std::mutex mutex;
    std::vector<std::pair<std::pair<int, int>, std::shared_ptr<const engine::ExactScorer>>> built;  // by (first, count)
    int64_t bytes = 0;  // what building them kept
  };

  explicit EnginePredictor(engine::ExactScorer scorer) : scorer_(std::move(scorer)), slices_(std::make_unique<Slices>()) {}
  // The scorer for a request's iterations: the whole model's, or a slice of it that is whole
  // for the request (*iterations becomes every iteration of the slice). The returned pointer
  // keeps a slice alive while a call scores with it.
  std::shared_ptr<const engine::ExactScorer> ScorerFor(IterationRange* iterations) const;
  static void PredictPart(const engine::ExactScorer& scorer, const FeatureBatch& rows, PredictKind kind, IterationRange iterations,
                          double* out);

  engine::ExactScorer scorer_;
  std::unique_ptr<Slices> slices_;
};

}  // namespace treescore
