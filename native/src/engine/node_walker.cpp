#include "node_walker.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "model/decision.h"

namespace treescore {
namespace engine {

NodeWalker::NodeWalker(const model::Forest& forest, Simd simd) : simd_(simd) {
  const double nan = std::nan("");
  for (const model::Tree& tree : forest.trees) {
    first_node_.push_back(nodes_.size());
    single_leaf_.push_back(tree.nodes.empty());
    for (const model::Node& node : tree.nodes) {
      const double threshold = model::InclusiveThreshold(node);
      Node flat{threshold, node.feature, {node.left, node.right}, node.decision.split,
                !model::NumericalGoesLeft(node.decision, threshold, nan), !model::NumericalGoesLeft(node.decision, threshold, 0.0),
                0, 0, 0};
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
  if (node.split == model::Split::kNumerical) {
    // An ordinary value picks its child by index, not by a branch the CPU would mispredict half the time.
    if (__builtin_expect(model::IsOrdinary(value), 1)) return node.child[!(value <= node.threshold)];
    return node.child[value != value ? node.nan_right : node.zero_right];
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

#if defined(__x86_64__)
// Rows walk trees eight at a time in AVX-512 registers: per step, each row's node (its threshold,
// feature, children, split kind and where it sends a NaN and a zero, gathered from the 32-byte
// nodes) and its value (gathered from the block) give its next node, as Child gives it: at a
// numerical node an ordinary value goes right exactly when !(value <= threshold), a NaN or a zero
// where the node sends it. A categorical node takes Child itself, lane by lane. A gather waits on
// the one before it, so several trees' walks (chains) step in turn, and one's gathers run while
// another's wait.
struct NodeWalker::Avx512 {
  static_assert(sizeof(Node) == 32 && offsetof(Node, threshold) == 0 && offsetof(Node, feature) == 8 &&
                    offsetof(Node, child) == 12 && offsetof(Node, split) == 20 && offsetof(Node, nan_right) == 21 &&
                    offsetof(Node, zero_right) == 22,
                "the gathers below read nodes at these offsets");
  static constexpr int kTrees = 4;  // trees walked at once, each by both halves of the block

  struct Chain {
    const Node* nodes;  // the tree's
    int first;          // its rows: [first, first + 8) of the block
    __m512i node;       // per row: a node of the tree, or ~leaf once it is out
    __mmask8 inside;
  };

  __attribute__((target("avx512f"))) static inline void Step(const NodeWalker& walker, const double* block, Chain* chain) {
    const char* base = reinterpret_cast<const char*>(chain->nodes);
    const __m512i zero = _mm512_setzero_si512();
    const __mmask8 inside = chain->inside;
    const __m512i slot = _mm512_slli_epi64(chain->node, 2);  // a node is four 8-byte words
    const __m512d threshold = _mm512_mask_i64gather_pd(_mm512_setzero_pd(), inside, slot, base, 8);
    const __m512i feature_left = _mm512_mask_i64gather_epi64(zero, inside, slot, base + 8, 8);
    const __m512i right_decision = _mm512_mask_i64gather_epi64(zero, inside, slot, base + 16, 8);
    const __m512i feature = _mm512_and_si512(feature_left, _mm512_set1_epi64(0xffffffff));
    const __m512i row = _mm512_add_epi64(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi64(chain->first));
    const __m512i value_at = _mm512_add_epi64(_mm512_slli_epi64(feature, 4), row);  // block[f * 16 + r]
    const __m512d value = _mm512_mask_i64gather_pd(_mm512_setzero_pd(), inside, value_at, block, 8);
    const __mmask8 is_nan = _mm512_cmp_pd_mask(value, value, _CMP_UNORD_Q);
    const __mmask8 is_zero = _mm512_cmp_pd_mask(value, _mm512_setzero_pd(), _CMP_EQ_OQ);
    const __mmask8 nan_right = _mm512_test_epi64_mask(right_decision, _mm512_set1_epi64(int64_t{0xff} << 40));
    const __mmask8 zero_right = _mm512_test_epi64_mask(right_decision, _mm512_set1_epi64(int64_t{0xff} << 48));
    const __mmask8 right = (_mm512_cmp_pd_mask(value, threshold, _CMP_NLE_UQ) & ~is_nan & ~is_zero) |
                           (is_nan & nan_right) | (is_zero & zero_right);
    const __m512i left_child = _mm512_srai_epi64(feature_left, 32);
    const __m512i right_child = _mm512_srai_epi64(_mm512_slli_epi64(right_decision, 32), 32);
    __m512i next = _mm512_mask_blend_epi64(right, left_child, right_child);
    const __m512i split = _mm512_and_si512(_mm512_srli_epi64(right_decision, 32), _mm512_set1_epi64(0xff));
    const __mmask8 special =
        inside & _mm512_cmpeq_epi64_mask(split, _mm512_set1_epi64(static_cast<int64_t>(model::Split::kCategorical)));
    if (special) {
      alignas(64) int64_t nodes_at[8], children[8];
      alignas(64) double values[8];
      _mm512_store_si512(nodes_at, chain->node);
      _mm512_store_si512(children, next);
      _mm512_store_pd(values, value);
      for (int r = 0; r < 8; ++r) {
        if (special & (1u << r)) children[r] = walker.Child(chain->nodes[nodes_at[r]], values[r]);
      }
      next = _mm512_load_si512(children);
    }
    chain->node = _mm512_mask_mov_epi64(chain->node, inside, next);
    chain->inside = _mm512_mask_cmpge_epi64_mask(inside, chain->node, zero);
  }

  // at[t][r] for the first `lanes` rows of a block (8 or 16) in up to kTrees trees, whose nodes
  // start at trees[t] (null for a tree that never split): the leaf (~leaf) each row reaches.
  __attribute__((target("avx512f"))) static void Walk(const NodeWalker& walker, const double* block, int lanes,
                                                     const Node* const* trees, int count, int (*at)[kBlockRows]) {
    Chain chains[kTrees * 2];
    int num_chains = 0;
    for (int t = 0; t < count; ++t) {
      for (int first = 0; first < lanes; first += 8) {
        const bool split = trees[t] != nullptr;  // else every row is at leaf 0 (~0) from the start
        chains[num_chains++] = {trees[t], first, split ? _mm512_setzero_si512() : _mm512_set1_epi64(~0), split ? __mmask8{0xff} : __mmask8{0}};
      }
    }
    for (bool stepping = true; stepping;) {
      stepping = false;
      for (int c = 0; c < num_chains; ++c) {
        if (chains[c].inside == 0) continue;
        Step(walker, block, &chains[c]);
        stepping |= chains[c].inside != 0;
      }
    }
    for (int c = 0; c < num_chains; ++c) {
      int* out = at[c / (lanes / 8)] + chains[c].first;
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_cvtepi64_epi32(chains[c].node));
    }
  }
};
#endif

template <typename TreeAt>
void NodeWalker::Walk(const double* block, int num_rows, size_t num_trees, TreeAt tree_at, int* leaves) const {
  const int n = LanesEvaluated(num_rows);
  auto write = [&](size_t i, const int* at) {
    for (int r = 0; r < n; ++r) leaves[static_cast<size_t>(r) * num_trees + i] = ~at[r];
  };
#if defined(__x86_64__)
  if (simd_ == Simd::kAvx512) {
    for (size_t i = 0; i < num_trees; i += Avx512::kTrees) {
      const int count = static_cast<int>(std::min<size_t>(Avx512::kTrees, num_trees - i));
      const Node* trees[Avx512::kTrees];
      int at[Avx512::kTrees][kBlockRows];
      for (int t = 0; t < count; ++t) {
        const size_t tree = tree_at(i + static_cast<size_t>(t));
        trees[t] = single_leaf_[tree] ? nullptr : nodes_.data() + first_node_[tree];
      }
      Avx512::Walk(*this, block, n, trees, count, at);
      for (int t = 0; t < count; ++t) write(i + static_cast<size_t>(t), at[t]);
    }
    return;
  }
#endif
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
    write(i, at);
  }
}

}  // namespace engine
}  // namespace treescore
