#include "feature_batch.h"

#include <cstddef>

namespace treescore {

FeatureBatch FeatureBatch::Columns(const std::vector<int32_t>& picked, std::vector<const double*>* pointers) const {
  pointers->resize(picked.size());
  for (size_t j = 0; j < picked.size(); ++j) (*pointers)[j] = columns[picked[j]];
  FeatureBatch view = *this;
  view.columns = pointers->data();
  view.num_cols = static_cast<int32_t>(picked.size());
  return view;
}

const double* FeatureBatch::RowMajorData() const {
  if (num_cols == 0 || row_stride != num_cols) return nullptr;
  for (int32_t f = 1; f < num_cols; ++f) {
    if (columns[f] != columns[0] + f) return nullptr;
  }
  return columns[0] + first_row * row_stride;
}

const double* FeatureBatch::ColumnMajorData() const {
  if (num_cols == 0 || row_stride != 1 || first_row != 0) return nullptr;
  for (int32_t f = 1; f < num_cols; ++f) {
    if (columns[f] != columns[0] + static_cast<int64_t>(f) * num_rows) return nullptr;
  }
  return columns[0];
}

RowMajor::RowMajor(const double* data, int32_t num_rows, int32_t num_cols)
    : columns_(static_cast<size_t>(num_cols < 0 ? 0 : num_cols)) {
  for (size_t f = 0; f < columns_.size(); ++f) columns_[f] = data + f;
  batch_.columns = columns_.data();
  batch_.row_stride = num_cols;
  batch_.num_rows = num_rows;
  batch_.num_cols = num_cols;
}

}  // namespace treescore
