// LightGBM's own predictor behind the Predictor interface: one loaded LightGBM model.
#pragma once

#include <cstdint>
#include <string>

#include "predictor.h"

namespace treescore {

// Owns one LightGBM BoosterHandle; freed exactly once, by the destructor.
//
// Thread safety: Predict may be called concurrently as long as every caller passes the same
// IterationRange. LightGBM writes the range into the booster when a predictor is created
// (LightGBM issue #6142), so callers that need other ranges must load a Booster of their own.
class Booster final : public Predictor {
 public:
  // Parses LightGBM's text model format. Throws LightGbmError on a model LightGBM rejects.
  static Booster FromModelText(const std::string& model_text);

  Booster(Booster&& other) noexcept;
  Booster& operator=(Booster&& other) noexcept;
  Booster(const Booster&) = delete;
  Booster& operator=(const Booster&) = delete;
  ~Booster();

  int num_features() const override { return num_features_; }
  int num_classes() const override { return num_classes_; }
  Engine engine() const override { return Engine::kLightGbm; }

  // How many doubles Predict writes per row for this kind and range.
  int64_t OutputsPerRow(PredictKind kind, IterationRange range) const override;

  // A row-major or column-major batch goes to LightGBM as it is; columns anywhere else are
  // gathered into row-major parts of at most RowsPerCopy rows first. num_threads is passed to LightGBM explicitly;
  // LightGBM applies it process-wide, so every caller in one process should use the same value.
  void Predict(const FeatureBatch& rows, PredictKind kind, IterationRange range, int num_threads, double* out,
               int64_t out_capacity) const override;
  using Predictor::Predict;
  using Predictor::PredictGrid;

 private:
  explicit Booster(void* handle);

  // One LightGBM call over a dense matrix, which writes num_rows * outputs_per_row doubles.
  void PredictMatrix(const double* data, int32_t num_rows, int32_t num_cols, int is_row_major, PredictKind kind,
                     IterationRange range, int num_threads, double* out, int64_t outputs_per_row) const;

  void* handle_;
  int num_features_ = 0;
  int num_classes_ = 0;
};

}  // namespace treescore
