// A linear leaf's value for a row, as LightGBM's Tree::Predict computes it (forest.h:
// LinearLeaves): the constant, then each term's product added in order, in double with no
// fused multiply-add; the plain leaf value where any of the leaf's features is NaN.
#pragma once

#include <cmath>

#include "forest.h"

namespace treescore {
namespace model {

// value(f): the row's value of feature f, read as the forest's InputReading reads it.
template <typename Value>
inline double LinearLeafValue(const Tree& tree, int leaf, Value value) {
  const LinearLeaves& linear = tree.linear;
  const auto l = static_cast<size_t>(leaf);
  double sum = linear.constant[l];
  for (uint32_t i = linear.first_term[l]; i < linear.first_term[l + 1]; ++i) {
    const double x = value(linear.feature[i]);
    if (std::isnan(x)) return tree.leaf_value[l];
    sum += linear.coefficient[i] * x;
  }
  return sum;
}

}  // namespace model
}  // namespace treescore
