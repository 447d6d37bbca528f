#include "predictor.h"

#include <stdexcept>

namespace treescore {

void CheckPredictArguments(const Predictor& predictor, int32_t num_rows, int32_t num_cols, PredictKind kind,
                           IterationRange range, int num_threads, int64_t out_capacity) {
  if (num_rows < 0 || num_cols < 0) throw std::invalid_argument("negative matrix shape");
  if (num_cols != predictor.num_features()) {
    throw std::invalid_argument("the model expects " + std::to_string(predictor.num_features()) +
                                " features but the batch has " + std::to_string(num_cols) + " columns");
  }
  if (num_threads < 1) throw std::invalid_argument("num_threads must be at least 1");
  const int64_t needed = static_cast<int64_t>(num_rows) * predictor.OutputsPerRow(kind, range);
  if (out_capacity < needed) {
    throw std::invalid_argument("output buffer holds " + std::to_string(out_capacity) + " doubles, " +
                                std::to_string(needed) + " needed");
  }
}

}  // namespace treescore
