// What every scoring engine offers the JNI layer and ensemble programs: one loaded model that
// scores a dense row-major batch. Two engines implement it: LightGBM's own predictor (Booster)
// and treescore's exact engine (EnginePredictor), which gives the same bits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/forest.h"
#include "rows/feature_batch.h"
#include "wire_codes.h"

namespace treescore {

// What a prediction returns (wire/codes.txt): the transformed output, as Booster.predict gives
// by default; the raw margin; the leaf index per tree; or SHAP contributions, num_features + 1
// per class. The codes are LightGBM's C_API_PREDICT_* values (booster.cpp checks).
using wire::PredictKind;

// The engines a model can be loaded into (wire/codes.txt).
using wire::Engine;

using model::IterationRange;

// The most rows a predictor copies at once where it must copy a batch's rows (to gather a view
// LightGBM cannot read, or to write a grid's points out as rows): memory::kCopyBytes of them
// (memory/working_memory.h), at least one row. So the copies grow with the model's width and not
// with the batch, which spark.treescore.batch.maxBytes bounds.
int32_t RowsPerCopy(int32_t num_cols);

class Predictor {
 public:
  virtual ~Predictor() = default;

  virtual int num_features() const = 0;
  virtual int num_classes() const = 0;
  virtual Engine engine() const = 0;

  // Bytes of native memory the model has built for what it was asked since it was loaded
  // (memory/account.h), which it keeps until it is freed.
  virtual int64_t built_bytes() const { return 0; }

  // The most native memory one call holds on each of its threads that does not grow with its
  // rows: a task slot's working allowance (wire/limits.txt, TaskWorkingMemoryBytes), or more
  // where the model needs more. The JVM's model cache charges what one beyond the allowance.
  virtual int64_t WorkingBytes() const;

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
