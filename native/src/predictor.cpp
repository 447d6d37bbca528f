#include "predictor.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <vector>

#include "memory/working_memory.h"

namespace treescore {

int32_t RowsPerCopy(int32_t num_cols) {
  const int64_t row_bytes = static_cast<int64_t>(num_cols < 1 ? 1 : num_cols) * static_cast<int64_t>(sizeof(double));
  return static_cast<int32_t>(memory::CopyBytes(num_cols) / row_bytes);
}

int64_t Predictor::WorkingBytes() const {
  // Only the copies are treescore's where LightGBM scores.
  memory::Shares shares;
  shares.copy = memory::CopyBytes(num_features());
  return shares.total();
}

void CheckPredictArguments(const Predictor& predictor, const FeatureBatch& rows, PredictKind kind,
                           IterationRange range, int num_threads, int64_t out_capacity) {
  if (rows.num_rows < 0 || rows.num_cols < 0 || rows.first_row < 0) throw std::invalid_argument("negative batch shape");
  if (rows.num_cols != predictor.num_features()) {
    throw std::invalid_argument("the model expects " + std::to_string(predictor.num_features()) +
                                " features but the batch has " + std::to_string(rows.num_cols) + " columns");
  }
  if (rows.num_rows > 0) {
    if (rows.columns == nullptr) throw std::invalid_argument("the batch has no column pointers");
    for (int32_t f = 0; f < rows.num_cols; ++f) {
      if (rows.columns[f] == nullptr) throw std::invalid_argument("the batch's column " + std::to_string(f) + " is null");
    }
  }
  if (num_threads < 1) throw std::invalid_argument("num_threads must be at least 1");
  const int64_t needed = static_cast<int64_t>(rows.num_rows) * predictor.OutputsPerRow(kind, range);
  if (out_capacity < needed) {
    throw std::invalid_argument("output buffer holds " + std::to_string(out_capacity) + " doubles, " +
                                std::to_string(needed) + " needed");
  }
}

int32_t CheckGridArguments(const Predictor& predictor, const FeatureBatch& base_rows, const GridPoints& grid,
                           PredictKind kind, IterationRange range, int num_threads, int64_t out_capacity) {
  if (grid.points < 1) throw std::invalid_argument("a grid needs at least one point per row");
  if (!grid.varying.empty() && grid.values == nullptr && base_rows.num_rows > 0) {
    throw std::invalid_argument("grid values missing");
  }
  const int32_t num_cols = base_rows.num_cols;
  std::vector<bool> seen(num_cols < 0 ? 0 : static_cast<size_t>(num_cols));
  for (int32_t f : grid.varying) {
    if (f < 0 || f >= num_cols) {
      throw std::invalid_argument("grid feature " + std::to_string(f) + " outside 0.." + std::to_string(num_cols - 1));
    }
    if (seen[static_cast<size_t>(f)]) throw std::invalid_argument("grid feature " + std::to_string(f) + " varies twice");
    seen[static_cast<size_t>(f)] = true;
  }
  const int64_t expanded = static_cast<int64_t>(base_rows.num_rows) * grid.points;
  if (expanded > std::numeric_limits<int32_t>::max()) {
    throw std::invalid_argument("a grid of " + std::to_string(expanded) + " points is more than one call scores");
  }
  FeatureBatch points = base_rows;
  points.num_rows = static_cast<int32_t>(expanded);
  CheckPredictArguments(predictor, points, kind, range, num_threads, out_capacity);
  return static_cast<int32_t>(expanded);
}

void Predictor::PredictGrid(const FeatureBatch& base_rows, const GridPoints& grid, PredictKind kind,
                            IterationRange range, int num_threads, double* out, int64_t out_capacity) const {
  const int32_t expanded = CheckGridArguments(*this, base_rows, grid, kind, range, num_threads, out_capacity);
  const size_t cols = static_cast<size_t>(base_rows.num_cols);
  const size_t num_varying = grid.varying.size();
  const int64_t outputs_per_row = OutputsPerRow(kind, range);
  const int32_t rows_per_copy = RowsPerCopy(base_rows.num_cols);
  std::vector<double> points(static_cast<size_t>(std::min(expanded, rows_per_copy)) * cols);
  for (int32_t first = 0; first < expanded; first += rows_per_copy) {
    const int32_t count = std::min(rows_per_copy, expanded - first);
    for (int32_t k = 0; k < count; ++k) {
      const int32_t e = first + k;
      double* point = points.data() + static_cast<size_t>(k) * cols;
      const int64_t base = e / grid.points;
      for (size_t f = 0; f < cols; ++f) point[f] = base_rows.At(base, static_cast<int32_t>(f));
      for (size_t v = 0; v < num_varying; ++v) point[grid.varying[v]] = grid.values[static_cast<size_t>(e) * num_varying + v];
    }
    Predict(RowMajor(points.data(), count, base_rows.num_cols).batch(), kind, range, num_threads,
            out + first * outputs_per_row, count * outputs_per_row);
  }
}

}  // namespace treescore
