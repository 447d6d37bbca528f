// QuickScorer (Lucchese et al., SIGIR 2015) for forests whose trees have at most 64 leaves:
// instead of walking each tree, every tree keeps a set of the leaves a row can still reach, in
// left-to-right order, in 32 bits where every tree has at most 32 leaves and in 64 otherwise. For each feature, the nodes whose test sends the row right clear
// their left subtree's leaves from their tree's set; the exit leaf is the lowest leaf left. The
// nodes on a feature are sorted by threshold, so a row finds them with one scan per feature.
//
// Exactness: a node's direction is the node decision's (model/decision.h). For ordinary values
// that is `x > threshold` goes right, the threshold being the node's inclusive one. A NaN and a zero go where the node's missing type sends them, the
// same for every row, so each feature keeps the list of nodes that send a NaN right and the list
// that send a zero right. Categorical nodes are tested one by one. Leaf values are then summed
// per class in iteration order, exactly as the node walk does.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "block.h"
#include "model/forest.h"
#include "simd.h"

namespace treescore {
namespace engine {

class QuickScorer {
 public:
  // Whether every tree of `forest` fits (at most 64 leaves).
  static bool Fits(const model::Forest& forest);
  // `simd`: the instruction set the node tests run on (simd.h); every level gives the same bits.
  QuickScorer(std::shared_ptr<const model::Forest> forest, Simd simd);
  Simd simd() const { return simd_; }

  // Rows a block evaluates together (V-QuickScorer, SIGIR 2016): each node's test runs on the
  // block's rows at once, in vector code compiled for each SIMD level (simd.h), with the same
  // bits on every level: the work is comparisons and bitwise ANDs, and the leaf values are
  // summed per row afterwards.
  static constexpr int kBlock = kBlockRows;

  // Scratch space for EvaluateBlock, one per thread: the leaf sets of every tree, kBlock rows
  // each, in words of leaf_set_bits().
  std::vector<uint64_t> NewScratch() const { return std::vector<uint64_t>(all_leaves_.size() * TreeWords()); }
  // Bytes of NewScratch per tree.
  int64_t SetBytesPerTree() const { return static_cast<int64_t>(TreeWords() * sizeof(uint64_t)); }
  // 32 where every tree has at most 32 leaves, else 64.
  int leaf_set_bits() const { return narrow_ ? 32 : 64; }

  // Evaluates every tree for the first `rows` rows of a block (block.h), leaving each tree's
  // leaf sets in `scratch`; the block's lanes past its rows, up to LanesEvaluated(rows), must
  // hold values (any), whose sets are never read.
  void EvaluateBlock(const double* block, int rows, std::vector<uint64_t>* scratch) const {
    ResetSets(rows, scratch->data());
    ApplyFeatures(block, rows, split_features_.data(), split_features_.size(), scratch->data());
  }

  // The two steps of EvaluateBlock, for callers that apply the features in groups (a grid
  // applies the features that do not vary once per row, the others once per point): every
  // tree's set back to all of its leaves, then the nodes on `features` (each at most once), for
  // a block of `rows` rows.
  void ResetSets(int rows, uint64_t* sets) const;
  void ApplyFeatures(const double* block, int rows, const int* features, size_t num_features, uint64_t* sets) const;
  // Copies one tree's leaf sets from one scratch to another.
  void CopyTreeSets(const uint64_t* from, size_t tree, uint64_t* to) const {
    std::copy_n(from + tree * TreeWords(), TreeWords(), to + tree * TreeWords());
  }
  // After EvaluateBlock: the left-to-right position of the leaf row r reaches in `tree`, the
  // lowest leaf left in its set, and that leaf's LightGBM index and value.
  int ExitPosition(const uint64_t* sets, size_t tree, int r) const {
    const size_t word = tree * kBlock + static_cast<size_t>(r);
    return narrow_ ? __builtin_ctz(reinterpret_cast<const uint32_t*>(sets)[word]) : __builtin_ctzll(sets[word]);
  }
  // Adds to sums[0..lanes) the values of the leaves the evaluated block's first `lanes` rows (8
  // or 16, LanesEvaluated) reach in `count` trees, first_tree, first_tree + stride, ..., one tree
  // after another: each row's additions are the node walk's, in its order, so the sums have its bits.
  void AddExitValues(const uint64_t* sets, size_t first_tree, int count, int stride, int lanes, double* sums) const;
  int LeafAt(size_t tree, int position) const { return leaf_by_position_[first_position_[tree] + static_cast<size_t>(position)]; }
  double ValueAt(size_t tree, int position) const {
    return value_by_position_[first_position_[tree] + static_cast<size_t>(position)];
  }

  // A node's effect on its tree's leaf set when it sends a row right, and its threshold.
  struct Mask {
    uint32_t tree;
    uint64_t clear;  // the leaves a row can no longer reach once this node sends it right
  };
  struct Threshold {
    double value;
    Mask mask;
  };

 private:
  struct CategoricalNode {
    uint32_t tree;
    uint64_t clear;
    uint32_t first_word;  // the node's category bitset: cat_words_[first_word, first_word + num_words)
    uint32_t num_words;
  };
  // A feature's nodes. A zero is compared with the threshold by nodes for which it is not
  // missing; only the others (model::Missing::kZero) send it the default way.
  struct FeatureNodes {
    std::vector<Threshold> by_threshold;               // nodes that compare a zero, ascending
    std::vector<Threshold> by_threshold_zero_missing;  // nodes for which a zero is missing, ascending
    std::vector<Mask> right_when_nan;                  // every numerical node that sends a NaN right
    std::vector<Mask> right_when_zero;                 // nodes for which a zero is missing that send it right
    std::vector<CategoricalNode> categorical;
  };

  struct Kernels;      // ApplyFeatures compiled for each SIMD level (quick_scorer.cpp)
  struct ExitKernels;  // AddExitValues likewise
  template <typename Word, int kHalves>
  void ApplyHalves(const double* block, const int* features, size_t num_features, uint64_t* sets) const;

  std::shared_ptr<const model::Forest> forest_;
  Simd simd_;
  int most_leaves_;  // of any one tree
  bool narrow_;      // 32-bit leaf sets, else 64-bit
  // A tree's kBlock sets, in 64-bit words of the scratch.
  size_t TreeWords() const { return narrow_ ? kBlock / 2 : kBlock; }
  std::vector<FeatureNodes> features_;
  std::vector<int> split_features_;                  // the features some node splits on
  std::vector<uint32_t> cat_words_;                  // every categorical node's bitset, one after another
  std::vector<uint64_t> all_leaves_;                 // per tree: every leaf
  std::vector<int> leaf_by_position_;                // left-to-right position -> leaf index, tree after tree
  std::vector<double> value_by_position_;            // left-to-right position -> leaf value, tree after tree
  std::vector<size_t> first_position_;               // per tree: where its positions start
};

}  // namespace engine
}  // namespace treescore
