// How native calls share a task slot's working memory that does not grow with the batch
// (wire/limits.txt, TaskWorkingMemoryBytes; docs/tuning.md, "Sizing native memory"). What grows
// with the batch counts toward spark.treescore.batch.maxBytes instead. A call holds at most one
// of each share at once.
#pragma once

#include <cstdint>

#include "wire_limits.h"

namespace treescore::memory {

// The rows a predictor copies where it cannot read a batch in place (predictor.h, RowsPerCopy),
// and a program's part of a model's rows and outputs (program.cpp): about this much at a time.
constexpr int64_t kCopyBytes = int64_t{1} << 20;
// What a copy of rows of num_cols doubles holds at most: kCopyBytes, or one row where a row is
// larger, as a copy takes at least one (predictor.h, RowsPerCopy).
constexpr int64_t CopyBytes(int64_t num_cols) {
  const int64_t row_bytes = (num_cols < 1 ? 1 : num_cols) * static_cast<int64_t>(sizeof(double));
  return row_bytes > kCopyBytes ? row_bytes : kCopyBytes;
}
// Left to the engine's scratch: a block of rows, and per tree a leaf or value per block row, or
// TreeSHAP's per-pass slots.
constexpr int64_t kScratchBytes = int64_t{1} << 20;
// TreeSHAP's block of feature values and contributions (engine/exact_scorer.cpp) and its memo of
// replayed leaves' addends (engine/addend_memo.h) share the rest: the block takes at most two
// thirds, and the memo what the block leaves.
constexpr int64_t kShapBytes = wire::kTaskWorkingMemoryBytes - kCopyBytes - kScratchBytes;
constexpr int64_t kShapBlockMostBytes = kShapBytes / 3 * 2;
static_assert(kShapBytes >= (int64_t{3} << 20), "TaskWorkingMemoryBytes leaves TreeSHAP too little");

// What one call on one thread holds of each share at most: the shares themselves, or more where
// a model needs more (engine::ExactScorer::WorkingShares).
struct Shares {
  int64_t copy = kCopyBytes;
  int64_t scratch = kScratchBytes;
  int64_t shap = kShapBytes;
  int64_t total() const { return copy + scratch + shap; }
};

}  // namespace treescore::memory
