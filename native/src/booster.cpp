#include "booster.h"

#include <LightGBM/c_api.h>

#include <stdexcept>
#include <utility>
#include <vector>

#include "lightgbm_error.h"

namespace {

// A kind's code is passed to LightGBM as its C API's predict type.
using treescore::PredictKind;
static_assert(static_cast<int>(PredictKind::kPrediction) == C_API_PREDICT_NORMAL, "wire/codes.txt: PredictKind");
static_assert(static_cast<int>(PredictKind::kRaw) == C_API_PREDICT_RAW_SCORE, "wire/codes.txt: PredictKind");
static_assert(static_cast<int>(PredictKind::kLeaf) == C_API_PREDICT_LEAF_INDEX, "wire/codes.txt: PredictKind");
static_assert(static_cast<int>(PredictKind::kContrib) == C_API_PREDICT_CONTRIB, "wire/codes.txt: PredictKind");

}  // namespace

namespace treescore {

Booster Booster::FromModelText(const std::string& model_text) {
  BoosterHandle handle = nullptr;
  int num_iterations = 0;
  CheckLightGbm(LGBM_BoosterLoadModelFromString(model_text.c_str(), &num_iterations, &handle),
                "LGBM_BoosterLoadModelFromString");
  return Booster(handle);
}

Booster::Booster(void* handle) : handle_(handle) {
  try {
    CheckLightGbm(LGBM_BoosterGetNumFeature(handle_, &num_features_), "LGBM_BoosterGetNumFeature");
    CheckLightGbm(LGBM_BoosterGetNumClasses(handle_, &num_classes_), "LGBM_BoosterGetNumClasses");
  } catch (...) {
    LGBM_BoosterFree(handle_);
    throw;
  }
}

Booster::Booster(Booster&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      num_features_(other.num_features_),
      num_classes_(other.num_classes_) {}

Booster& Booster::operator=(Booster&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) LGBM_BoosterFree(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    num_features_ = other.num_features_;
    num_classes_ = other.num_classes_;
  }
  return *this;
}

Booster::~Booster() {
  if (handle_ != nullptr) LGBM_BoosterFree(handle_);
}

int64_t Booster::OutputsPerRow(PredictKind kind, IterationRange range) const {
  int64_t outputs = 0;
  CheckLightGbm(LGBM_BoosterCalcNumPredict(handle_, 1, static_cast<int>(kind), range.start_iteration,
                                           range.num_iterations, &outputs),
                "LGBM_BoosterCalcNumPredict");
  return outputs;
}

void Booster::Predict(const FeatureBatch& rows, PredictKind kind, IterationRange range, int num_threads, double* out,
                      int64_t out_capacity) const {
  CheckPredictArguments(*this, rows, kind, range, num_threads, out_capacity);
  const int64_t needed = static_cast<int64_t>(rows.num_rows) * OutputsPerRow(kind, range);
  if (rows.num_rows == 0) return;
  const double* data = rows.RowMajorData();
  int is_row_major = 1;
  std::vector<double> gathered;
  if (data == nullptr && (data = rows.ColumnMajorData()) != nullptr) {
    is_row_major = 0;
  } else if (data == nullptr) {
    gathered.resize(static_cast<size_t>(rows.num_rows) * static_cast<size_t>(rows.num_cols));
    for (int32_t r = 0; r < rows.num_rows; ++r) {
      for (int32_t f = 0; f < rows.num_cols; ++f) gathered[static_cast<size_t>(r) * rows.num_cols + f] = rows.At(r, f);
    }
    data = gathered.data();
  }
  const std::string parameters = "num_threads=" + std::to_string(num_threads);
  int64_t written = 0;
  CheckLightGbm(LGBM_BoosterPredictForMat(handle_, data, C_API_DTYPE_FLOAT64, rows.num_rows, rows.num_cols,
                                          is_row_major, static_cast<int>(kind), range.start_iteration,
                                          range.num_iterations, parameters.c_str(), &written, out),
                "LGBM_BoosterPredictForMat");
  if (written != needed) {
    throw std::logic_error("LightGBM wrote " + std::to_string(written) + " outputs, expected " +
                           std::to_string(needed));
  }
}

}  // namespace treescore
