// The rows a scoring call hands every engine, as views of memory the caller owns: a batch of
// feature columns, a row-major matrix seen as one, and a what-if grid over base rows.
#pragma once

#include <cstdint>
#include <vector>

namespace treescore {

// A batch of rows as every engine reads it: feature f of row r is columns[f][(first_row + r) *
// row_stride]. The JVM passes feature-major batches (each column a run of doubles, written into
// one matrix or read in place from a Spark column vector, row_stride 1); a row-major matrix is
// the same view with columns[f] = data + f and row_stride = num_cols (RowMajor builds it). The
// columns belong to the caller and must outlive the call.
struct FeatureBatch {
  const double* const* columns = nullptr;  // num_cols pointers, each to its feature's value in row 0
  int64_t row_stride = 1;                  // doubles from one row's value to the next row's
  int64_t first_row = 0;
  int32_t num_rows = 0;
  int32_t num_cols = 0;

  double At(int64_t row, int32_t feature) const { return columns[feature][(first_row + row) * row_stride]; }
  // Rows [first, first + count) of this batch.
  FeatureBatch Rows(int64_t first, int32_t count) const {
    FeatureBatch part = *this;
    part.first_row += first;
    part.num_rows = count;
    return part;
  }
  // The batch's columns columns[0], columns[1], ... in that order (a model's view of a
  // program's inputs), through `pointers`, which the caller keeps for as long as the view.
  FeatureBatch Columns(const std::vector<int32_t>& columns, std::vector<const double*>* pointers) const;
  // Where the batch is one dense matrix, its first value: row-major (row after row) or
  // column-major (column after column, num_rows apart); nullptr otherwise.
  const double* RowMajorData() const;
  const double* ColumnMajorData() const;
};

// The FeatureBatch of a row-major matrix of num_rows x num_cols doubles, with the column
// pointers it needs; it views `data`, which must outlive it.
class RowMajor {
 public:
  RowMajor(const double* data, int32_t num_rows, int32_t num_cols);
  RowMajor(const RowMajor&) = delete;
  RowMajor& operator=(const RowMajor&) = delete;
  const FeatureBatch& batch() const { return batch_; }

 private:
  std::vector<const double*> columns_;
  FeatureBatch batch_;
};

// A what-if grid over a batch of base rows: each base row is scored at `points` points, and
// point k of base row r reads values[(r * points + k) * varying.size() + v] for the feature
// varying[v] instead of the base row's value. Features not in `varying` keep the base value at
// every point. `varying` holds distinct feature indices.
struct GridPoints {
  int points = 1;
  std::vector<int32_t> varying;
  const double* values = nullptr;
};

}  // namespace treescore
