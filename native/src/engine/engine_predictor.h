// treescore's exact engine behind the Predictor interface, so the JNI layer and ensemble
// programs use it exactly as they use LightGBM's predictor.
#pragma once

#include <string>

#include "../predictor.h"
#include "exact_scorer.h"

namespace treescore {
namespace engine {

class EnginePredictor final : public Predictor {
 public:
  // Parses the model text; throws std::invalid_argument on a model the engine cannot evaluate.
  static EnginePredictor FromModelText(const std::string& model_text, Layout layout = Layout::kAuto);

  int num_features() const override { return scorer_.forest().num_features; }
  int num_classes() const override { return scorer_.forest().num_classes; }
  EngineKind engine() const override { return EngineKind::kTreescore; }
  const ExactScorer& scorer() const { return scorer_; }

  // Raw and prediction give num_classes doubles per row, leaf one per used tree; contributions
  // are refused (std::invalid_argument), since the engine has no TreeSHAP of its own.
  int64_t OutputsPerRow(PredictKind kind, IterationRange range) const override;

  // Rows are split into num_threads contiguous parts scored side by side; every row's result
  // is computed on one thread alone, so the thread count never changes a bit.
  void Predict(const FeatureBatch& rows, PredictKind kind, IterationRange range, int num_threads, double* out,
               int64_t out_capacity) const override;

  // Raw scores and predictions share the work on features that do not vary across a row's
  // points (ExactScorer::PredictGrid); leaf indices take the default, one row per point. Base
  // rows are split between threads as Predict splits rows, with the same bits.
  void PredictGrid(const FeatureBatch& base_rows, const GridPoints& grid, PredictKind kind, IterationRange range,
                   int num_threads, double* out, int64_t out_capacity) const override;
  using Predictor::Predict;
  using Predictor::PredictGrid;

 private:
  explicit EnginePredictor(ExactScorer scorer) : scorer_(std::move(scorer)) {}
  void PredictPart(const FeatureBatch& rows, PredictKind kind, Iterations iterations, double* out) const;

  ExactScorer scorer_;
};

}  // namespace engine
}  // namespace treescore
