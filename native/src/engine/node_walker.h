// The engine's layout for any tree: each row walks each tree from the root, taking at every
// node the way the node decision (model/decision.h) gives. Nodes are flat records, one array for the forest, and a block of rows
// walks a tree side by side, so the rows' independent walks overlap instead of waiting on each
// other's loads and branches.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "block.h"
#include "simd.h"
#include "model/forest.h"

namespace treescore {
namespace engine {

class NodeWalker {
 public:
  // `simd`: where it is AVX-512, eight rows walk a tree at once in vector registers, with
  // gathers; elsewhere each row walks on its own. Both take every node's decision.h rule.
  NodeWalker(const model::Forest& forest, Simd simd);

  // For the first `num_rows` rows of a block (block.h), the leaf index each reaches in each tree
  // first_tree + t: leaves[r * num_trees + t]; the lanes past them up to LanesEvaluated(num_rows)
  // get the leaves of whatever values they hold, as QuickScorer gives them.
  void LeavesOf(const double* block, int num_rows, size_t first_tree, size_t num_trees, int* leaves) const;

  // The same for the trees listed in trees[0, num_trees): leaves[r * num_trees + i] for trees[i].
  void LeavesOfTrees(const double* block, int num_rows, const size_t* trees, size_t num_trees, int* leaves) const;

 private:
  struct Node {
    double threshold;         // numerical nodes: the inclusive threshold (decision.h)
    int32_t feature;
    int32_t child[2];         // left, right: a node of the same tree, or ~leaf
    model::Split split;
    // Numerical nodes: where a NaN and a zero go, the same for every row (decision.h's
    // NumericalGoesLeft, computed once); every other value goes right exactly when !(v <= t).
    bool nan_right, zero_right;
    uint8_t unused = 0;
    uint32_t first_word;      // categorical nodes: the left-going categories, cat_words_[first_word, + num_words)
    uint32_t num_words;
  };

  int Child(const Node& node, double value) const;
  struct Avx512;  // the vector walk (node_walker.cpp)
  // LeavesOf over num_trees trees, the i-th being tree_at(i).
  template <typename TreeAt>
  void Walk(const double* block, int num_rows, size_t num_trees, TreeAt tree_at, int* leaves) const;

  Simd simd_;
  std::vector<Node> nodes_;           // every tree's nodes, tree after tree
  std::vector<size_t> first_node_;    // per tree: where its nodes start
  std::vector<bool> single_leaf_;     // per tree: it never split
  std::vector<uint32_t> cat_words_;
};

}  // namespace engine
}  // namespace treescore
