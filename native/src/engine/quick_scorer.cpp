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

}  // namespace engine
}  // namespace treescore

namespace treescore {
namespace engine {
namespace {

// One node's test over a block: rows whose `applies` lane is all ones lose the node's left leaves.
// Plain loops over kBlock lanes, inlined into each target clone of ExitLeavesBlock and vectorised there.
inline __attribute__((always_inline)) void ApplyWhere(uint64_t* sets, const uint64_t* applies, uint64_t keep) {
  for (int r = 0; r < QuickScorer::kBlock; ++r) sets[r] &= keep | ~applies[r];
}

// Lanes where x > threshold (all ones) among the `regular` lanes; returns whether any is set.
inline __attribute__((always_inline)) bool Above(const double* x, const uint64_t* regular, double threshold,
                                                 uint64_t* out) {
  uint64_t any = 0;
  for (int r = 0; r < QuickScorer::kBlock; ++r) {
    out[r] = regular[r] & (0 - static_cast<uint64_t>(x[r] > threshold));
    any |= out[r];
  }
  return any != 0;
}

}  // namespace

// On x86-64, compiled for AVX-512, AVX2 and the baseline, and the loader picks the best the CPU
// has; elsewhere (aarch64, macOS's clang) compiled once for the target.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void QuickScorer::ExitLeavesBlock(const double* rows, int num_rows, int num_cols, size_t first_tree, size_t num_trees,
                                  int* leaves, std::vector<uint64_t>* scratch) const {
  // sets[tree * kBlock + r]: the leaves row r can still reach in that tree.
  uint64_t* sets = scratch->data();
  for (size_t t = 0; t < all_leaves_.size(); ++t) {
    for (int r = 0; r < kBlock; ++r) sets[t * kBlock + r] = all_leaves_[t];
  }
  double x[kBlock];
  uint64_t nan[kBlock], zero[kBlock], regular[kBlock], above[kBlock];
  for (int f : split_features_) {
    const FeatureNodes& nodes = features_[static_cast<size_t>(f)];
    for (int r = 0; r < kBlock; ++r) {
      // Lanes past the block's rows read as NaN and their results are never used.
      x[r] = r < num_rows ? rows[static_cast<size_t>(r) * num_cols + f] : std::nan("");
      nan[r] = 0 - static_cast<uint64_t>(std::isnan(x[r]));
      zero[r] = 0 - static_cast<uint64_t>(x[r] == 0.0);
      regular[r] = ~(nan[r] | zero[r]);
    }
    for (const Mask& m : nodes.right_when_nan) ApplyWhere(sets + m.tree * kBlock, nan, m.keep);
    for (const Mask& m : nodes.right_when_zero) ApplyWhere(sets + m.tree * kBlock, zero, m.keep);
    for (const Threshold& t : nodes.by_threshold) {  // ascending: stop once no row is above
      if (!Above(x, regular, t.value, above)) break;
      ApplyWhere(sets + t.mask.tree * kBlock, above, t.mask.keep);
    }
    for (const CategoricalNode& c : nodes.categorical) {
      for (int r = 0; r < num_rows; ++r) {
        if (!CategoricalGoesLeft(forest_->trees[c.tree], c.node, x[r])) sets[c.tree * kBlock + r] &= c.keep;
      }
    }
  }
  for (int r = 0; r < num_rows; ++r) {
    for (size_t i = 0; i < num_trees; ++i) {
      const size_t t = first_tree + i;
      leaves[static_cast<size_t>(r) * num_trees + i] =
          forest_->trees[t].num_leaves <= 1
              ? 0
              : leaf_by_position_[t][static_cast<size_t>(__builtin_ctzll(sets[t * kBlock + static_cast<size_t>(r)]))];
    }
  }
}

}  // namespace engine
}  // namespace treescore
