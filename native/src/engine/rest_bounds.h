// Bounds on what a model's remaining trees can still add to a row's raw score, after each of
// its stages: the top-K selector's pruning power (top_k/selector.h).
//
// The plain bound sums every remaining tree's largest (or smallest) leaf. A row's own values
// make it tighter: a tree that splits on feature f can only reach the leaves whose paths agree
// with the row's value of f. Each tree is assigned one feature (the first numerical feature it
// splits on, breadth first, among the features that most trees start with), and the feature's
// thresholds over its trees cut its values into bins within which every one of those
// decisions is the same. Per bin and stage boundary, the largest (smallest) leaf each assigned
// tree can reach from that bin is summed ahead of time, so a row's bound costs one lookup per
// conditioned feature, not a walk of the trees.
//
// Exact: a bin holds only ordinary values (model/decision.h: not NaN, not zero as read), for
// which a numerical node goes left exactly when value <= its inclusive threshold; the missing
// bin, for the rest, allows every leaf. A bound here is a sum of leaf values in an order other than the
// score's, so it is rounded too; the top-K selector widens it by the error bound.
#pragma once

#include <cstdint>
#include <vector>

#include "model/forest.h"

namespace treescore {
namespace engine {

class RestBounds {
 public:
  RestBounds() = default;
  // A model's trees, in order, cut into stages of stage_trees[s] trees each; its rows' values
  // are read as `reading` says.
  RestBounds(model::InputReading reading, const std::vector<const model::Tree*>& trees, const std::vector<int>& stage_trees);

  // The model features the bounds are conditioned on, and the bin of a row's value of the
  // i-th of them (what Upper and Lower take, one per conditioned feature).
  const std::vector<int>& features() const { return features_; }
  uint16_t Bin(size_t i, double value) const;

  // After stages [0, s): at least (Upper) or at most (Lower) the sum of the remaining trees'
  // leaves a row with these bins reaches; nullptr bins: for any row.
  double Upper(size_t s, const uint16_t* bins) const { return Bound(s, bins, true); }
  double Lower(size_t s, const uint16_t* bins) const { return Bound(s, bins, false); }
  // The sum of the remaining trees' largest leaf magnitudes (for the rounding bound), and
  // their count.
  double Magnitude(size_t s) const { return magnitude_[s]; }
  int Trees(size_t s) const { return trees_[s]; }

 private:
  // One conditioned feature: its thresholds (ascending), and per boundary and bin the sums of
  // its trees' reachable extremes. Bins 0..edges.size() are (edges[j-1], edges[j]], the last
  // one everything above; bin edges.size() + 1 is the missing bin.
  struct Conditioned {
    std::vector<double> edges;
    std::vector<double> upper, lower;  // [boundary * bins + bin]
    size_t bins() const { return edges.size() + 2; }
  };
  double Bound(size_t s, const uint16_t* bins, bool upper) const;

  model::InputReading reading_ = model::InputReading::kLightGbmZeroing;
  std::vector<int> features_;
  std::vector<Conditioned> conditioned_;
  // Per boundary: the sums over the remaining trees assigned to no feature (free_*), over all of
  // them (any_*, the plain bound), their largest magnitudes, and their count.
  std::vector<double> free_upper_, free_lower_, any_upper_, any_lower_, magnitude_;
  std::vector<int> trees_;
};

}  // namespace engine
}  // namespace treescore
