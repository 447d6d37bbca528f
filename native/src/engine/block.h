// The rows the engine evaluates together, as both of its layouts read them: a block of at most
// kBlockRows rows held feature-major, feature f of row r at block[f * kBlockRows + r], each value
// already read as LightGBM's C API reads it (exact_scorer.h: AsLightGbmReadsIt). A feature's
// values for the block's rows sit side by side, so QuickScorer loads them as whole vectors.
#pragma once

#include <algorithm>
#include <cstddef>

namespace treescore {
namespace engine {

constexpr int kBlockRows = 16;

// The lanes a block of `rows` rows is evaluated on: a block of at most half its rows uses its
// first half only, so that a call of a few rows pays for a few.
constexpr int LanesEvaluated(int rows) { return rows <= kBlockRows / 2 ? kBlockRows / 2 : kBlockRows; }

// Adds to sums[0..lanes) (lanes as LanesEvaluated gives) each row's value(r, t) over the trees
// t = first_tree, first_tree + stride, ... (count of them), in that order. Eight rows at a time, a
// bound the compiler sees, so that their sums stay in registers.
template <typename Value>
inline void AddRowsByEights(int lanes, size_t first_tree, int count, int stride, double* sums, Value value) {
  constexpr int kGroup = kBlockRows / 2;
  for (int first = 0; first < lanes; first += kGroup) {
    double group[kGroup];
    std::copy_n(sums + first, kGroup, group);
    for (int i = 0; i < count; ++i) {
      const size_t t = first_tree + static_cast<size_t>(i) * static_cast<size_t>(stride);
      for (int r = 0; r < kGroup; ++r) group[r] += value(first + r, t);
    }
    std::copy_n(group, kGroup, sums + first);
  }
}

}  // namespace engine
}  // namespace treescore
