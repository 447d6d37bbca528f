// The path arithmetic of LightGBM's TreeSHAP (Tree::ExtendPath, UnwindPath, UnwoundPathSum in
// src/io/tree.cpp): the unique features on a root-to-leaf path, each with the fraction of
// training rows that follow the path through it (zero_fraction) and whether the row does
// (one_fraction, 0 or 1), and the permutation weights of the path's subsets. Every operation is
// LightGBM's, in its order and with its conversions, so the weights are its bits.
#pragma once

#include <vector>

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

// Storage UnwoundShapPathSums reuses from call to call.
struct ShapSumsWork {
  // Per element: hot ones first, cold ones last.
  std::vector<double> zero, one, next, total;
};

// For each element `at` in 1..depth of a path of elements 0..depth, the total weight of the path
// with `at` unwound (LightGBM's UnwoundPathSum), into sums[at - 1]. Each element's total takes
// LightGBM's operations in its order; they run a step at a time across all elements rather than
// one element after another, so that the elements' chains of divisions overlap, and hot and cold
// elements each have their own loop rather than a branch per element. The subset share of each
// step, which LightGBM divides out anew for every element, is the same division, made once.
inline void UnwoundShapPathSums(const ShapPathElement* path, int depth, ShapSumsWork* work, double* sums) {
  if (work->zero.size() < static_cast<size_t>(depth)) {
    for (auto* column : {&work->zero, &work->one, &work->next, &work->total}) column->resize(static_cast<size_t>(depth));
  }
  // Hot elements from the front of each column, cold ones from the back.
  double* zero = work->zero.data();
  double* one = work->one.data();
  double* next = work->next.data();
  double* total = work->total.data();
  size_t hot = 0;
  size_t cold = static_cast<size_t>(depth);
  for (int at = 1; at <= depth; ++at) {
    const size_t k = path[at].one_fraction != 0 ? hot++ : --cold;
    zero[k] = path[at].zero_fraction;
    one[k] = path[at].one_fraction;
    next[k] = path[depth].weight;
    total[k] = 0;
  }
  for (int i = depth - 1; i >= 0; --i) {
    const double share = (depth - i) / static_cast<double>(depth + 1);
    const double weight = path[i].weight;
    for (size_t k = 0; k < hot; ++k) {
      const double part = next[k] * (depth + 1) / static_cast<double>((i + 1) * one[k]);
      total[k] += part;
      next[k] = weight - part * zero[k] * share;
    }
    for (size_t k = cold; k < static_cast<size_t>(depth); ++k) total[k] += (weight / zero[k]) / share;
  }
  hot = 0;
  cold = static_cast<size_t>(depth);
  for (int at = 1; at <= depth; ++at) sums[at - 1] = total[path[at].one_fraction != 0 ? hot++ : --cold];
}

}  // namespace engine
}  // namespace treescore
