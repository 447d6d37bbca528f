// The rows the engine evaluates together, as both of its layouts read them: a block of at most
// kBlockRows rows held feature-major, feature f of row r at block[f * kBlockRows + r], each value
// already read as LightGBM's C API reads it (exact_scorer.h: AsLightGbmReadsIt). A feature's
// values for the block's rows sit side by side, so QuickScorer loads them as whole vectors.
#pragma once

namespace treescore {
namespace engine {

constexpr int kBlockRows = 16;

// The lanes a block of `rows` rows is evaluated on: a block of at most half its rows uses its
// first half only, so that a call of a few rows pays for a few.
constexpr int LanesEvaluated(int rows) { return rows <= kBlockRows / 2 ? kBlockRows / 2 : kBlockRows; }

}  // namespace engine
}  // namespace treescore
