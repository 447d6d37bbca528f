// The path arithmetic of LightGBM's TreeSHAP (Tree::ExtendPath, UnwindPath, UnwoundPathSum in
// src/io/tree.cpp): the unique features on a root-to-leaf path, each with the fraction of
// training rows that follow the path through it (zero_fraction) and whether the row does
// (one_fraction, 0 or 1), and the permutation weights of the path's subsets. Every operation is
// LightGBM's, in its order and with its conversions, so the weights are its bits.
#pragma once

namespace treescore {
namespace engine {

struct ShapPathElement {
  int feature;
  double zero_fraction;
  double one_fraction;
  double weight;  // the permutation weight of subsets with as many ones as this element's place
};

// Appends (feature, zero, one) at `depth` (the path holds elements 0..depth-1) and updates the weights.
inline void ExtendShapPath(ShapPathElement* path, int depth, double zero, double one, int feature) {
  path[depth] = ShapPathElement{feature, zero, one, depth == 0 ? 1.0 : 0.0};
  for (int i = depth - 1; i >= 0; --i) {
    path[i + 1].weight += one * path[i].weight * (i + 1) / static_cast<double>(depth + 1);
    path[i].weight = zero * path[i].weight * (depth - i) / static_cast<double>(depth + 1);
  }
}

// Removes element `at` of a path of elements 0..depth, undoing its extension of the weights.
inline void UnwindShapPath(ShapPathElement* path, int depth, int at) {
  const double one = path[at].one_fraction;
  const double zero = path[at].zero_fraction;
  double next_one_portion = path[depth].weight;
  for (int i = depth - 1; i >= 0; --i) {
    if (one != 0) {
      const double kept = path[i].weight;
      path[i].weight = next_one_portion * (depth + 1) / static_cast<double>((i + 1) * one);
      next_one_portion = kept - path[i].weight * zero * (depth - i) / static_cast<double>(depth + 1);
    } else {
      path[i].weight = (path[i].weight * (depth + 1)) / static_cast<double>(zero * (depth - i));
    }
  }
  // The weights stay where they are; the elements after `at` move down one place.
  for (int i = at; i < depth; ++i) {
    path[i].feature = path[i + 1].feature;
    path[i].zero_fraction = path[i + 1].zero_fraction;
    path[i].one_fraction = path[i + 1].one_fraction;
  }
}

// The total weight of a path of elements 0..depth with element `at` unwound, computed without
// unwinding it.
inline double UnwoundShapPathSum(const ShapPathElement* path, int depth, int at) {
  const double one = path[at].one_fraction;
  const double zero = path[at].zero_fraction;
  double next_one_portion = path[depth].weight;
  double total = 0;
  for (int i = depth - 1; i >= 0; --i) {
    if (one != 0) {
      const double part = next_one_portion * (depth + 1) / static_cast<double>((i + 1) * one);
      total += part;
      next_one_portion = path[i].weight - part * zero * ((depth - i) / static_cast<double>(depth + 1));
    } else {
      total += (path[i].weight / zero) / ((depth - i) / static_cast<double>(depth + 1));
    }
  }
  return total;
}

}  // namespace engine
}  // namespace treescore
