#include "node_walker.h"

#include <cmath>

namespace treescore {
namespace engine {

NodeWalker::NodeWalker(const Forest& forest) {
  for (const Tree& tree : forest.trees) {
    first_node_.push_back(nodes_.size());
    single_leaf_.push_back(tree.num_leaves <= 1);
    for (int n = 0; n + 1 < tree.num_leaves; ++n) {
      Node node{tree.threshold[n], tree.split_feature[n], {tree.left_child[n], tree.right_child[n]},
                tree.decision_type[n], 0, 0};
      if (node.decision & kCategoricalMask) {
        const auto split = static_cast<size_t>(tree.threshold[n]);
        const int first = tree.cat_boundaries[split];
        const int end = tree.cat_boundaries[split + 1];
        node.first_word = static_cast<uint32_t>(cat_words_.size());
        node.num_words = static_cast<uint32_t>(end - first);
        cat_words_.insert(cat_words_.end(), tree.cat_threshold.begin() + first, tree.cat_threshold.begin() + end);
      }
      nodes_.push_back(node);
    }
  }
}

// LightGBM's decision at one node (tree.h: NumericalDecision, CategoricalDecision), for a value
// already read as its C API reads it (so a zero is exactly +0.0).
inline int NodeWalker::Child(const Node& node, double value) const {
  const uint8_t decision = node.decision;
  const int left = node.child[0], right = node.child[1];
  if (!(decision & kCategoricalMask)) {
    // An ordinary value picks its child by index, not by a branch the CPU would mispredict half the time.
    if (__builtin_expect(value == value && value != 0.0, 1)) return node.child[!(value <= node.threshold)];
    const auto missing = static_cast<MissingType>((decision >> 2) & 3);
    if (value != value && missing != MissingType::kNaN) value = 0.0;  // NaN reads as zero unless NaN is missing
    if ((missing == MissingType::kZero && value == 0.0) || (missing == MissingType::kNaN && value != value)) {
      return (decision & kDefaultLeftMask) ? left : right;
    }
    return value <= node.threshold ? left : right;
  }
  // NaN goes right. LightGBM truncates the value to int; on x86 a value outside int's range
  // becomes INT_MIN, which is negative and goes right too, as does any value <= -1.
  if (value != value || value <= -1.0 || value >= 2147483648.0) return right;
  const int category = static_cast<int>(value);
  const uint32_t word = static_cast<uint32_t>(category) / 32;
  if (word < node.num_words && ((cat_words_[node.first_word + word] >> (category % 32)) & 1u)) return left;
  return right;
}

void NodeWalker::LeavesOf(const double* block, int num_rows, size_t first_tree, size_t num_trees, int* leaves) const {
  Walk(block, num_rows, num_trees, [first_tree](size_t i) { return first_tree + i; }, leaves);
}

void NodeWalker::LeavesOfTrees(const double* block, int num_rows, const size_t* trees, size_t num_trees,
                               int* leaves) const {
  Walk(block, num_rows, num_trees, [trees](size_t i) { return trees[i]; }, leaves);
}

template <typename TreeAt>
void NodeWalker::Walk(const double* block, int num_rows, size_t num_trees, TreeAt tree_at, int* leaves) const {
  const int n = num_rows < kBlockRows ? num_rows : kBlockRows;
  for (size_t i = 0; i < num_trees; ++i) {
    const size_t tree = tree_at(i);
    int at[kBlockRows];
    if (single_leaf_[tree]) {
      for (int r = 0; r < n; ++r) at[r] = ~0;
    } else {
      // The rows walk side by side: each step moves every row still inside the tree one level.
      const Node* nodes = nodes_.data() + first_node_[tree];
      for (int r = 0; r < n; ++r) at[r] = 0;
      bool inside = true;
      while (inside) {
        inside = false;
        for (int r = 0; r < n; ++r) {
          if (at[r] < 0) continue;
          const Node& node = nodes[at[r]];
          at[r] = Child(node, block[static_cast<size_t>(node.feature) * kBlockRows + static_cast<size_t>(r)]);
          inside |= at[r] >= 0;
        }
      }
    }
    for (int r = 0; r < n; ++r) leaves[static_cast<size_t>(r) * num_trees + i] = ~at[r];
  }
}

}  // namespace engine
}  // namespace treescore
