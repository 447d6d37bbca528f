#include "quick_scorer.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace treescore {
namespace engine {
namespace {

// Bits [first, last) set.
uint64_t Bits(int first, int last) {
  const uint64_t below_last = last >= 64 ? ~0ull : ((1ull << last) - 1);
  const uint64_t below_first = (1ull << first) - 1;
  return below_last & ~below_first;
}

bool GoesRightWhenNaN(const Tree& tree, int node) {
  const uint8_t d = tree.decision_type[node];
  const auto missing = static_cast<MissingType>((d >> 2) & 3);
  if (missing == MissingType::kNaN || missing == MissingType::kZero) return !(d & kDefaultLeftMask);  // NaN reads as 0.0 for Zero
  return !(0.0 <= tree.threshold[node]);  // None: NaN reads as 0.0
}

bool GoesRightWhenZero(const Tree& tree, int node) {
  const uint8_t d = tree.decision_type[node];
  const auto missing = static_cast<MissingType>((d >> 2) & 3);
  if (missing == MissingType::kZero) return !(d & kDefaultLeftMask);
  return !(0.0 <= tree.threshold[node]);
}

bool CategoricalGoesLeft(const Tree& tree, int node, double value) {
  if (std::isnan(value) || value <= -1.0 || value >= 2147483648.0) return false;
  const int category = static_cast<int>(value);
  const int split = static_cast<int>(tree.threshold[node]);
  const int first = tree.cat_boundaries[split];
  const int word = category / 32;
  return word < tree.cat_boundaries[split + 1] - first && ((tree.cat_threshold[first + word] >> (category % 32)) & 1u);
}

}  // namespace

bool QuickScorer::Fits(const Forest& forest) {
  return std::all_of(forest.trees.begin(), forest.trees.end(), [](const Tree& t) { return t.num_leaves <= 64; });
}

QuickScorer::QuickScorer(std::shared_ptr<const Forest> shared) : forest_(std::move(shared)) {
  const Forest& forest = *forest_;
  features_.resize(static_cast<size_t>(forest.num_features));
  for (size_t t = 0; t < forest.trees.size(); ++t) {
    const Tree& tree = forest.trees[t];
    all_leaves_.push_back(Bits(0, tree.num_leaves));
    leaf_by_position_.emplace_back(static_cast<size_t>(tree.num_leaves), 0);
    if (tree.num_leaves <= 1) continue;
    // Number the leaves left to right; each node covers a contiguous run of positions, and
    // going right removes its left child's run.
    int next = 0;
    std::function<std::pair<int, int>(int)> visit = [&](int child) -> std::pair<int, int> {
      if (child < 0) {
        const int position = next++;
        leaf_by_position_[t][static_cast<size_t>(position)] = ~child;
        return {position, position + 1};
      }
      const auto left = visit(tree.left_child[child]);
      const auto right = visit(tree.right_child[child]);
      const Mask mask{static_cast<uint32_t>(t), ~Bits(left.first, left.second)};
      FeatureNodes& nodes = features_[static_cast<size_t>(tree.split_feature[child])];
      if (tree.decision_type[child] & kCategoricalMask) {
        nodes.categorical.push_back({mask.tree, child, mask.keep});
      } else {
        nodes.by_threshold.push_back({tree.threshold[child], mask});
        if (GoesRightWhenNaN(tree, child)) nodes.right_when_nan.push_back(mask);
        if (GoesRightWhenZero(tree, child)) nodes.right_when_zero.push_back(mask);
      }
      return {left.first, right.second};
    };
    visit(0);
  }
  for (size_t f = 0; f < features_.size(); ++f) {
    FeatureNodes& nodes = features_[f];
    std::stable_sort(nodes.by_threshold.begin(), nodes.by_threshold.end(),
                     [](const Threshold& a, const Threshold& b) { return a.value < b.value; });
    if (!nodes.by_threshold.empty() || !nodes.categorical.empty()) split_features_.push_back(static_cast<int>(f));
  }
}

void QuickScorer::ExitLeaves(const double* row, size_t first_tree, size_t num_trees, int* leaves,
                             std::vector<uint64_t>* scratch) const {
  std::vector<uint64_t>& reachable = *scratch;
  std::copy(all_leaves_.begin(), all_leaves_.end(), reachable.begin());
  for (int f : split_features_) {
    const FeatureNodes& nodes = features_[static_cast<size_t>(f)];
    const double x = row[f];
    if (std::isnan(x)) {
      for (const Mask& m : nodes.right_when_nan) reachable[m.tree] &= m.keep;
    } else if (x == 0.0) {  // rows are read as LightGBM reads them: any |x| <= kZeroThreshold is +0.0
      for (const Mask& m : nodes.right_when_zero) reachable[m.tree] &= m.keep;
    } else {
      // Ascending thresholds: every node with threshold < x sends x right (x > threshold).
      for (const Threshold& t : nodes.by_threshold) {
        if (!(x > t.value)) break;
        reachable[t.mask.tree] &= t.mask.keep;
      }
    }
    for (const CategoricalNode& c : nodes.categorical) {
      if (!CategoricalGoesLeft(forest_->trees[c.tree], c.node, x)) reachable[c.tree] &= c.keep;
    }
  }
  for (size_t i = 0; i < num_trees; ++i) {
    const size_t t = first_tree + i;
    leaves[i] = forest_->trees[t].num_leaves <= 1 ? 0 : leaf_by_position_[t][static_cast<size_t>(__builtin_ctzll(reachable[t]))];
  }
}

}  // namespace engine
}  // namespace treescore
