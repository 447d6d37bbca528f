// The node decision, the one place that says which way a row goes at a node (forest.h). The
// node walk, the QuickScorer build, top-K's bounds and TreeSHAP all take node semantics from
// here; each keeps its own layout of the nodes, but never its own copy of the rule.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "forest.h"

namespace treescore {
namespace model {

// LightGBM's kZeroThreshold is the float literal 1e-35f, widened to double.
constexpr double kLightGbmZeroThreshold = static_cast<double>(1e-35f);

// LightGBM's C API reads a dense row into (index, value) pairs and keeps only values with
// |v| > kZeroThreshold or NaN; everything else (+-0, subnormals, 1e-36) reaches the trees as
// +0.0. Written with a mask rather than a branch so that loops over a column vectorise.
inline double AsLightGbmReadsIt(double value) {
  const bool kept = (value > kLightGbmZeroThreshold) | (value < -kLightGbmZeroThreshold) | (value != value);
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  bits &= -static_cast<uint64_t>(kept);
  std::memcpy(&value, &bits, sizeof bits);
  return value;
}

// A row's value as the forest's trees see it.
inline double ReadInput(InputReading reading, double value) {
  switch (reading) {
    case InputReading::kLightGbmZeroing:
      break;
  }
  return AsLightGbmReadsIt(value);
}

// The threshold t' of a numerical node such that an ordinary value goes left exactly when
// value <= t', whatever the node's comparison: engines keep this one form. Below a threshold t
// is at most the double just below t; nothing is below -inf, and nothing is <= NaN.
inline double InclusiveThreshold(const Node& node) {
  if (node.decision.comparison == Comparison::kLeftIfLessOrEqual) return node.threshold;
  if (node.threshold == -std::numeric_limits<double>::infinity()) return std::numeric_limits<double>::quiet_NaN();
  return std::nextafter(node.threshold, -std::numeric_limits<double>::infinity());
}

// A value every numerical node compares with its threshold, whatever it does with missing ones.
inline bool IsOrdinary(double value) { return value == value && value != 0.0; }

// Whether a numerical node sends a value (as read) its default way.
inline bool IsMissing(Decision decision, double value) {
  switch (decision.missing) {
    case Missing::kNone:
      return false;
    case Missing::kZero:
      return value == 0.0 || value != value;
    case Missing::kNaN:
      return value != value;
  }
  return false;
}

// Whether a numerical node with the given InclusiveThreshold sends a value (as read) left.
inline bool NumericalGoesLeft(Decision decision, double inclusive_threshold, double value) {
  if (IsMissing(decision, value)) return decision.default_left;
  if (value != value) value = 0.0;  // not missing to this node: compared as a zero
  return value <= inclusive_threshold;
}

// The category a value names, or -1 for one that names none and goes right at every
// categorical node: NaN, and anything that truncates to a negative int. LightGBM truncates
// toward zero (so -0.99 is category 0); on x86 a value outside int's range becomes INT_MIN.
inline int64_t CategoryOf(double value) {
  if (value != value || value <= -1.0 || value >= 2147483648.0) return -1;
  return static_cast<int64_t>(static_cast<int>(value));
}

// Whether a categorical node whose left-going categories are words[0, num_words) sends a value left.
inline bool CategoricalGoesLeft(const uint32_t* words, uint32_t num_words, double value) {
  const int64_t category = CategoryOf(value);
  if (category < 0) return false;
  const auto word = static_cast<uint64_t>(category) / 32;
  return word < num_words && ((words[word] >> (category % 32)) & 1u);
}

// Whether `node` of `tree` sends a value (as read) left.
inline bool GoesLeft(const Tree& tree, const Node& node, double value) {
  if (node.decision.split == Split::kCategorical) {
    return CategoricalGoesLeft(tree.category_words.data() + node.first_category_word, node.num_category_words, value);
  }
  return NumericalGoesLeft(node.decision, InclusiveThreshold(node), value);
}

}  // namespace model
}  // namespace treescore
