// The scorer core: one loaded LightGBM model and batch prediction over a dense matrix.
#pragma once

#include <cstdint>
#include <string>

namespace treescore {

// What a prediction returns; the values match LightGBM's C_API_PREDICT_* constants.
enum class PredictKind : int {
  kPrediction = 0,  // transformed output, as Booster.predict gives by default
  kRaw = 1,         // raw margin
  kLeaf = 2,        // leaf index per tree
  kContrib = 3,     // SHAP contributions, num_features + 1 per class
};

// Which iterations take part. num_iterations <= 0 means "all from start_iteration on".
struct IterationRange {
  int start_iteration = 0;
  int num_iterations = -1;
};

// Owns one LightGBM BoosterHandle; freed exactly once, by the destructor.
//
// Thread safety: Predict may be called concurrently as long as every caller passes the same
// IterationRange. LightGBM writes the range into the booster when a predictor is created
// (LightGBM issue #6142), so callers that need other ranges must load a Booster of their own.
class Booster {
 public:
  // Parses LightGBM's text model format. Throws LightGbmError on a model LightGBM rejects.
  static Booster FromModelText(const std::string& model_text);

  Booster(Booster&& other) noexcept;
  Booster& operator=(Booster&& other) noexcept;
  Booster(const Booster&) = delete;
  Booster& operator=(const Booster&) = delete;
  ~Booster();

  int num_features() const { return num_features_; }
  int num_classes() const { return num_classes_; }

  // How many doubles Predict writes per row for this kind and range.
  int64_t OutputsPerRow(PredictKind kind, IterationRange range) const;

  // Scores num_rows rows of num_cols doubles each, stored row after row, into `out`, which
  // must hold num_rows * OutputsPerRow(kind, range) doubles. NaN is LightGBM's missing value.
  // num_threads is passed to LightGBM explicitly; LightGBM applies it process-wide, so every
  // caller in one process should use the same value.
  void Predict(const double* rows, int32_t num_rows, int32_t num_cols, PredictKind kind,
               IterationRange range, int num_threads, double* out, int64_t out_capacity) const;

 private:
  explicit Booster(void* handle);

  void* handle_;
  int num_features_ = 0;
  int num_classes_ = 0;
};

}  // namespace treescore
