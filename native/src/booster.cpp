#include "booster.h"

#include <LightGBM/c_api.h>

#include <algorithm>
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
  if (rows.num_rows == 0) return;
  const int64_t outputs_per_row = OutputsPerRow(kind, range);
  if (const double* data = rows.RowMajorData()) {
    PredictMatrix(data, rows.num_rows, rows.num_cols, /*is_row_major=*/1, kind, range, num_threads, out, outputs_per_row);
  } else if ((data = rows.ColumnMajorData()) != nullptr) {
    PredictMatrix(data, rows.num_rows, rows.num_cols, /*is_row_major=*/0, kind, range, num_threads, out, outputs_per_row);
  } else {
    // A view LightGBM cannot read (a program's columns of its batch): rows copied a part at a
    // time, each part scored alone, which gives the same bits as one call.
    const int32_t rows_per_copy = RowsPerCopy(rows.num_cols);
    std::vector<double> gathered(static_cast<size_t>(std::min(rows.num_rows, rows_per_copy)) * rows.num_cols);
    for (int32_t first = 0; first < rows.num_rows; first += rows_per_copy) {
      const int32_t count = std::min(rows_per_copy, rows.num_rows - first);
      for (int32_t r = 0; r < count; ++r) {
        for (int32_t f = 0; f < rows.num_cols; ++f) {
          gathered[static_cast<size_t>(r) * rows.num_cols + f] = rows.At(first + r, f);
        }
      }
      PredictMatrix(gathered.data(), count, rows.num_cols, /*is_row_major=*/1, kind, range, num_threads,
                    out + first * outputs_per_row, outputs_per_row);
    }
  }
}

void Booster::PredictMatrix(const double* data, int32_t num_rows, int32_t num_cols, int is_row_major, PredictKind kind,
                            IterationRange range, int num_threads, double* out, int64_t outputs_per_row) const {
  const std::string parameters = "num_threads=" + std::to_string(num_threads);
  int64_t written = 0;
  CheckLightGbm(LGBM_BoosterPredictForMat(handle_, data, C_API_DTYPE_FLOAT64, num_rows, num_cols, is_row_major,
                                          static_cast<int>(kind), range.start_iteration, range.num_iterations,
                                          parameters.c_str(), &written, out),
                "LGBM_BoosterPredictForMat");
  const int64_t needed = static_cast<int64_t>(num_rows) * outputs_per_row;
  if (written != needed) {
    throw std::logic_error("LightGBM wrote " + std::to_string(written) + " outputs, expected " +
                           std::to_string(needed));
  }
}

}  // namespace treescore
