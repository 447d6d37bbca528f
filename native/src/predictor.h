// What every scoring engine offers the JNI layer and ensemble programs: one loaded model that
// scores a dense row-major batch. Two engines implement it: LightGBM's own predictor (Booster)
// and treescore's exact engine (engine::EnginePredictor), which gives the same bits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

// The engines a model can be loaded into; the codes are what the JVM passes.
enum class EngineKind : int { kLightGbm = 0, kTreescore = 1 };

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

class Predictor {
 public:
  virtual ~Predictor() = default;

  virtual int num_features() const = 0;
  virtual int num_classes() const = 0;
  virtual EngineKind engine() const = 0;

  // How many doubles Predict writes per row for this kind and range.
  virtual int64_t OutputsPerRow(PredictKind kind, IterationRange range) const = 0;

  // Scores the batch's rows into `out`, which must hold num_rows * OutputsPerRow(kind, range)
  // doubles. NaN is the missing value. num_threads is the most threads this call may use.
  virtual void Predict(const FeatureBatch& rows, PredictKind kind, IterationRange range, int num_threads, double* out,
                       int64_t out_capacity) const = 0;

  // Predict over a row-major matrix of num_rows rows of num_cols doubles.
  void Predict(const double* rows, int32_t num_rows, int32_t num_cols, PredictKind kind, IterationRange range,
               int num_threads, double* out, int64_t out_capacity) const {
    Predict(RowMajor(rows, num_rows, num_cols).batch(), kind, range, num_threads, out, out_capacity);
  }

  // Scores every point of every base row into `out`, base row after base row and point after
  // point within one: num_rows * grid.points * OutputsPerRow(kind, range) doubles, each equal
  // to Predict on that point's row. This default writes the points out as rows and calls
  // Predict; an engine that shares the work on the features that do not vary overrides it.
  virtual void PredictGrid(const FeatureBatch& base_rows, const GridPoints& grid, PredictKind kind,
                           IterationRange range, int num_threads, double* out, int64_t out_capacity) const;

  // PredictGrid over a row-major matrix of num_rows base rows of num_cols doubles.
  void PredictGrid(const double* rows, int32_t num_rows, int32_t num_cols, const GridPoints& grid, PredictKind kind,
                   IterationRange range, int num_threads, double* out, int64_t out_capacity) const {
    PredictGrid(RowMajor(rows, num_rows, num_cols).batch(), grid, kind, range, num_threads, out, out_capacity);
  }
};

// The checks every engine makes before it scores: shape, column pointers, thread count and
// output room.
void CheckPredictArguments(const Predictor& predictor, const FeatureBatch& rows, PredictKind kind,
                           IterationRange range, int num_threads, int64_t out_capacity);

// The same for a grid, plus its points and varying features; returns how many rows the grid's
// points make (num_rows * points), which must fit an int32 as a row count does.
int32_t CheckGridArguments(const Predictor& predictor, const FeatureBatch& base_rows, const GridPoints& grid,
                           PredictKind kind, IterationRange range, int num_threads, int64_t out_capacity);

}  // namespace treescore
