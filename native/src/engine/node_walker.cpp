#include "node_walker.h"

#include <cmath>

#include "model/decision.h"

namespace treescore {
namespace engine {

NodeWalker::NodeWalker(const model::Forest& forest) {
  for (const model::Tree& tree : forest.trees) {
    first_node_.push_back(nodes_.size());
    single_leaf_.push_back(tree.nodes.empty());
    for (const model::Node& node : tree.nodes) {
      Node flat{model::InclusiveThreshold(node), node.feature, {node.left, node.right}, node.decision, 0, 0};
      if (node.decision.split == model::Split::kCategorical) {
        flat.first_word = static_cast<uint32_t>(cat_words_.size());
        flat.num_words = node.num_category_words;
        const auto first = tree.category_words.begin() + node.first_category_word;
        cat_words_.insert(cat_words_.end(), first, first + node.num_category_words);
      }
      nodes_.push_back(flat);
    }
  }
  cat_words_.push_back(0);  // so that an empty category set still has an address
}

inline int NodeWalker::Child(const Node& node, double value) const {
  if (node.decision.split == model::Split::kNumerical) {
    // An ordinary value picks its child by index, not by a branch the CPU would mispredict half the time.
    if (__builtin_expect(model::IsOrdinary(value), 1)) return node.child[!(value <= node.threshold)];
    return node.child[!model::NumericalGoesLeft(node.decision, node.threshold, value)];
  }
  return node.child[!model::CategoricalGoesLeft(cat_words_.data() + node.first_word, node.num_words, value)];
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
  const int n = LanesEvaluated(num_rows);
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
