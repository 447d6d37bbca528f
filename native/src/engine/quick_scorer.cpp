#include "quick_scorer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>

#include "model/decision.h"
#include "wire_limits.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace treescore {
namespace engine {
namespace {

// Bits [first, last) set.
uint64_t Bits(int first, int last) {
  const uint64_t below_last = last >= 64 ? ~0ull : ((1ull << last) - 1);
  const uint64_t below_first = (1ull << first) - 1;
  return below_last & ~below_first;
}

}  // namespace

// A leaf set is one machine word: a bit per leaf.
static_assert(wire::kQuickScorerMostLeaves == 64 && wire::kQuickScorerNarrowLeaves == 32, "leaf sets are 64 or 32 bits");

bool QuickScorer::Fits(const model::Forest& forest) {
  // A NaN threshold sends every value right, which no place in a sorted threshold list can say;
  // such a (hand-made) model takes the node walk.
  return std::all_of(forest.trees.begin(), forest.trees.end(), [](const model::Tree& tree) {
    return tree.num_leaves() <= wire::kQuickScorerMostLeaves && std::none_of(tree.nodes.begin(), tree.nodes.end(), [](const model::Node& node) {
             return node.decision.split == model::Split::kNumerical && std::isnan(model::InclusiveThreshold(node));
           });
  });
}

QuickScorer::QuickScorer(std::shared_ptr<const model::Forest> shared, Simd simd)
    : forest_(std::move(shared)),
      simd_(simd),
      most_leaves_(std::accumulate(forest_->trees.begin(), forest_->trees.end(), 1,
                                   [](int most, const model::Tree& tree) { return std::max(most, tree.num_leaves()); })),
      narrow_(most_leaves_ <= wire::kQuickScorerNarrowLeaves) {
  const model::Forest& forest = *forest_;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  features_.resize(static_cast<size_t>(forest.num_features));
  for (size_t t = 0; t < forest.trees.size(); ++t) {
    const model::Tree& tree = forest.trees[t];
    all_leaves_.push_back(Bits(0, tree.num_leaves()));
    first_position_.push_back(leaf_by_position_.size());
    leaf_by_position_.resize(leaf_by_position_.size() + static_cast<size_t>(tree.num_leaves()), 0);
    value_by_position_.resize(leaf_by_position_.size(), tree.leaf_value[0]);  // a one-leaf tree's only value
    if (tree.nodes.empty()) continue;
    // Number the leaves left to right; each node covers a contiguous run of positions, and
    // going right removes its left child's run.
    int next = 0;
    std::function<std::pair<int, int>(int)> visit = [&](int child) -> std::pair<int, int> {
      if (child < 0) {
        const int position = next++;
        leaf_by_position_[first_position_[t] + static_cast<size_t>(position)] = ~child;
        value_by_position_[first_position_[t] + static_cast<size_t>(position)] = tree.leaf_value[static_cast<size_t>(~child)];
        return {position, position + 1};
      }
      const model::Node& node = tree.nodes[static_cast<size_t>(child)];
      const auto left = visit(node.left);
      const auto right = visit(node.right);
      const Mask mask{static_cast<uint32_t>(t), Bits(left.first, left.second)};
      FeatureNodes& nodes = features_[static_cast<size_t>(node.feature)];
      if (node.decision.split == model::Split::kCategorical) {
        nodes.categorical.push_back({mask.tree, mask.clear, static_cast<uint32_t>(cat_words_.size()), node.num_category_words});
        const auto first = tree.category_words.begin() + node.first_category_word;
        cat_words_.insert(cat_words_.end(), first, first + node.num_category_words);
      } else {
        const double threshold = model::InclusiveThreshold(node);
        const bool zero_is_missing = model::IsMissing(node.decision, 0.0);
        (zero_is_missing ? nodes.by_threshold_zero_missing : nodes.by_threshold).push_back({threshold, mask});
        if (!model::NumericalGoesLeft(node.decision, threshold, nan)) nodes.right_when_nan.push_back(mask);
        if (zero_is_missing && !model::NumericalGoesLeft(node.decision, threshold, 0.0)) nodes.right_when_zero.push_back(mask);
      }
      return {left.first, right.second};
    };
    visit(0);
  }
  cat_words_.push_back(0);  // the pad a node with an empty set may read
  // The pad AddExitValues reads past the last tree's values: it reads a tree's 32 at once.
  value_by_position_.resize(value_by_position_.size() + wire::kQuickScorerNarrowLeaves, 0.0);
  for (size_t f = 0; f < features_.size(); ++f) {
    FeatureNodes& nodes = features_[f];
    for (auto* list : {&nodes.by_threshold, &nodes.by_threshold_zero_missing}) {
      std::stable_sort(list->begin(), list->end(), [](const Threshold& a, const Threshold& b) { return a.value < b.value; });
    }
    if (!nodes.by_threshold.empty() || !nodes.by_threshold_zero_missing.empty() || !nodes.categorical.empty()) {
      split_features_.push_back(static_cast<int>(f));
    }
  }
}

}  // namespace engine
}  // namespace treescore

namespace treescore {
namespace engine {
namespace {

// A block's lanes as GCC vector types: a block of 16 rows is two halves of 8 lanes of doubles,
// and one leaf set per row. Generic vector code, which the compiler lowers to AVX-512, AVX2,
// SSE2 or NEON instructions for each compiled level (simd.h; a half is one AVX-512 register, two
// AVX2 ones); the only floating-point operations are comparisons, so every level gives the same
// bits. Sixteen rows rather than eight ran A's member a third faster; a block of at most 8 rows
// uses its first half only (LanesEvaluated), so that calls of a few rows do not pay for sixteen.
static_assert(QuickScorer::kBlock == 16 && LanesEvaluated(1) == 8, "a block is two halves of the lane types below");
typedef double Lanes __attribute__((vector_size(64)));
typedef int64_t Rows __attribute__((vector_size(64)));  // per row of a half: all ones where a test holds
constexpr int kHalf = 8;

// One tree's leaf sets for a block, a word of Word per row, row r's being word r, as ExitPosition
// reads them. ClearWhere takes from the rows a test holds for the leaves it rules out;
// ClearAbove does it for the rows whose value is above a threshold.
template <typename Word>
struct TreeSets;

// 64-bit sets: two halves of 8 rows (an AVX-512 register each).
template <>
struct TreeSets<uint64_t> {
  typedef uint64_t Half __attribute__((vector_size(64), aligned(8)));  // the scratch promises 8-byte alignment only
  Half half[2];

  template <int kHalves>
  void Reset(uint64_t leaves) {
    for (int h = 0; h < kHalves; ++h) half[h] = Half{} + leaves;
  }
  template <int kHalves>
  void ClearWhere(const Rows* rows, uint64_t clear) {
    for (int h = 0; h < kHalves; ++h) half[h] &= ~(reinterpret_cast<Half>(rows[h]) & clear);
  }
  template <int kHalves>
  void ClearAbove(const Lanes* x, double threshold, uint64_t clear) {
    for (int h = 0; h < kHalves; ++h) half[h] = x[h] > threshold ? half[h] & ~clear : half[h];
  }
};

// 32-bit sets: all 16 rows in one AVX-512 register, so a test is one masked AND on 64 bytes
// rather than two; trees of at most 32 leaves (LightGBM's default has 31) use them.
template <>
struct TreeSets<uint32_t> {
  typedef uint32_t Whole __attribute__((vector_size(64)));
  typedef uint32_t Half __attribute__((vector_size(32)));
  typedef int32_t WholeRows __attribute__((vector_size(64)));
  typedef int32_t HalfRows __attribute__((vector_size(32)));
  uint32_t words[kBlockRows];

  template <int kHalves>
  void Reset(uint64_t leaves) {
    for (int r = 0; r < kHalves * kHalf; ++r) words[r] = static_cast<uint32_t>(leaves);
  }
  template <int kHalves>
  void ClearWhere(const Rows* rows, uint64_t clear) {
    const uint32_t narrow = static_cast<uint32_t>(clear);
    const HalfRows low = __builtin_convertvector(rows[0], HalfRows);
    if constexpr (kHalves == 2) {
      const WholeRows all = __builtin_shufflevector(low, __builtin_convertvector(rows[1], HalfRows), 0, 1, 2, 3, 4, 5, 6,
                                                    7, 8, 9, 10, 11, 12, 13, 14, 15);
      Whole sets;
      std::memcpy(&sets, words, sizeof sets);
      sets = all ? sets & ~narrow : sets;
      std::memcpy(words, &sets, sizeof sets);
    } else {
      Half sets;
      std::memcpy(&sets, words, sizeof sets);
      sets = low ? sets & ~narrow : sets;
      std::memcpy(words, &sets, sizeof sets);
    }
  }
  template <int kHalves>
  void ClearAbove(const Lanes* x, double threshold, uint64_t clear) {
    Rows above[kHalves];
    for (int h = 0; h < kHalves; ++h) above[h] = x[h] > threshold;
    ClearWhere<kHalves>(above, clear);
  }
};

// Combines a vector's eight lanes into one value: each step combines every lane with the lane
// half as far away, until lane 0 holds all eight.
template <typename Vector, typename Combine>
inline __attribute__((always_inline)) auto FoldLanes(Vector v, Combine combine) {
  v = combine(v, __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3));
  v = combine(v, __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5));
  v = combine(v, __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6));
  return v[0];
}

// Whether any of the first kHalves halves' lanes is all ones.
template <int kHalves>
inline __attribute__((always_inline)) bool AnyLane(const Rows* rows) {
  Rows any = rows[0];
  if (kHalves == 2) any |= rows[1];
  return FoldLanes(any, [](Rows a, Rows b) { return a | b; }) != 0;
}

// Every node of `ascending` whose threshold a row's value is above sends that row right. Scans in
// threshold order and stops at the first threshold no row is above.
template <typename Word, int kHalves>
inline __attribute__((always_inline)) void ScanThresholds(const std::vector<QuickScorer::Threshold>& ascending,
                                                          const Lanes* x, TreeSets<Word>* sets) {
  // The largest value of the block's rows: NaN lanes never count.
  const Lanes none = Lanes{} - std::numeric_limits<double>::infinity();
  Lanes top = x[0] > none ? x[0] : none;
  if (kHalves == 2) top = x[1] > top ? x[1] : top;
  const double largest = FoldLanes(top, [](Lanes kept, Lanes other) { return other > kept ? other : kept; });
  for (const QuickScorer::Threshold& t : ascending) {
    if (!(t.value < largest)) break;
    sets[t.mask.tree].template ClearAbove<kHalves>(x, t.value, t.mask.clear);
  }
}

}  // namespace

void QuickScorer::ResetSets(int rows, uint64_t* scratch) const {
  auto reset = [&](auto* sets) {
    for (size_t t = 0; t < all_leaves_.size(); ++t) {
      LanesEvaluated(rows) == kHalf ? sets[t].template Reset<1>(all_leaves_[t]) : sets[t].template Reset<2>(all_leaves_[t]);
    }
  };
  narrow_ ? reset(reinterpret_cast<TreeSets<uint32_t>*>(scratch)) : reset(reinterpret_cast<TreeSets<uint64_t>*>(scratch));
}

// ApplyFeatures on the first kHalves halves of a block, with leaf sets of Word; inlined into each
// level's ApplyFeatures.
template <typename Word, int kHalves>
inline __attribute__((always_inline)) void QuickScorer::ApplyHalves(const double* block, const int* features,
                                                                    size_t num_features, uint64_t* scratch) const {
  // sets[tree][r]: the leaves row r can still reach in that tree.
  TreeSets<Word>* sets = reinterpret_cast<TreeSets<Word>*>(scratch);
  const double nan = std::nan("");
  for (size_t i = 0; i < num_features; ++i) {
    const int f = features[i];
    const FeatureNodes& nodes = features_[static_cast<size_t>(f)];
    Lanes x[2];
    std::memcpy(x, block + static_cast<size_t>(f) * kBlock, sizeof x);  // the feature's lanes, side by side
    Rows is_nan[kHalves], is_zero[kHalves];
    for (int h = 0; h < kHalves; ++h) {
      is_nan[h] = x[h] != x[h];
      is_zero[h] = x[h] == 0.0;
    }
    // Most blocks have neither, and skip both lists.
    const bool any_nan = AnyLane<kHalves>(is_nan), any_zero = AnyLane<kHalves>(is_zero);
    if (any_nan) {
      for (const Mask& m : nodes.right_when_nan) sets[m.tree].template ClearWhere<kHalves>(is_nan, m.clear);
    }
    if (any_zero) {
      for (const Mask& m : nodes.right_when_zero) sets[m.tree].template ClearWhere<kHalves>(is_zero, m.clear);
    }
    // NaN lanes compare false with every threshold, so the lists above alone move them.
    ScanThresholds<Word, kHalves>(nodes.by_threshold, x, sets);
    if (!nodes.by_threshold_zero_missing.empty()) {
      // Zeros went where right_when_zero sent them; as NaN they compare false here too.
      Lanes nonzero[kHalves];
      for (int h = 0; h < kHalves; ++h) nonzero[h] = x[h] == 0.0 ? Lanes{} + nan : x[h];
      ScanThresholds<Word, kHalves>(nodes.by_threshold_zero_missing, nonzero, sets);
    }
    if (!nodes.categorical.empty()) {
      // Each row's category as a bitset word and bit, once per feature; a category that goes
      // right everywhere gets a word no node has.
      uint32_t word[kBlock], bit[kBlock];
      for (int r = 0; r < kHalves * kHalf; ++r) {
        const int64_t category = model::CategoryOf(x[r / kHalf][r % kHalf]);
        word[r] = category < 0 ? UINT32_MAX : static_cast<uint32_t>(category >> 5);
        bit[r] = category < 0 ? 0u : 1u << (category & 31);
      }
      for (const CategoricalNode& c : nodes.categorical) {
        // A category in the node's set goes left, any other right; computed without branches,
        // whose outcome a CPU could not predict. Reading word 0 is always in bounds (the words
        // end with a zero pad), and a word outside the node's set counts as no bit.
        const uint32_t* words = cat_words_.data() + c.first_word;
        uint64_t lanes[kHalves * kHalf];
        for (int r = 0; r < kHalves * kHalf; ++r) {
          const bool inside = word[r] < c.num_words;
          const uint32_t found = words[inside ? word[r] : 0] & (inside ? bit[r] : 0u);
          lanes[r] = found ? 0 : ~uint64_t{0};
        }
        Rows right[kHalves];
        std::memcpy(right, lanes, sizeof lanes);
        sets[c.tree].template ClearWhere<kHalves>(right, c.clear);
      }
    }
  }
}

// ApplyFeatures compiled for each SIMD level: the same generic vector code, lowered to AVX-512,
// AVX2 or the target's baseline instructions.
struct QuickScorer::Kernels {
  static inline __attribute__((always_inline)) void Apply(const QuickScorer& scorer, const double* block, int rows,
                                                          const int* features, size_t num_features, uint64_t* sets) {
    const bool half = LanesEvaluated(rows) == kHalf;
    if (scorer.narrow_) {
      half ? scorer.ApplyHalves<uint32_t, 1>(block, features, num_features, sets)
           : scorer.ApplyHalves<uint32_t, 2>(block, features, num_features, sets);
    } else {
      half ? scorer.ApplyHalves<uint64_t, 1>(block, features, num_features, sets)
           : scorer.ApplyHalves<uint64_t, 2>(block, features, num_features, sets);
    }
  }
  static void Baseline(const QuickScorer& scorer, const double* block, int rows, const int* features,
                       size_t num_features, uint64_t* sets) {
    Apply(scorer, block, rows, features, num_features, sets);
  }
#if defined(__x86_64__)
  __attribute__((target("avx2"))) static void Avx2(const QuickScorer& scorer, const double* block, int rows,
                                                   const int* features, size_t num_features, uint64_t* sets) {
    Apply(scorer, block, rows, features, num_features, sets);
  }
  __attribute__((target("avx512f"))) static void Avx512(const QuickScorer& scorer, const double* block, int rows,
                                                        const int* features, size_t num_features, uint64_t* sets) {
    Apply(scorer, block, rows, features, num_features, sets);
  }
#endif
};

void QuickScorer::ApplyFeatures(const double* block, int rows, const int* features, size_t num_features,
                                uint64_t* scratch) const {
#if defined(__x86_64__)
  if (simd_ == Simd::kAvx512) return Kernels::Avx512(*this, block, rows, features, num_features, scratch);
  if (simd_ == Simd::kAvx2) return Kernels::Avx2(*this, block, rows, features, num_features, scratch);
#endif
  Kernels::Baseline(*this, block, rows, features, num_features, scratch);
}

// AddExitValues for each SIMD level. With 32-bit sets a vector of eight rows' words finds their
// exit positions at once: a word's lowest set bit, converted to a float, is exactly 2^position,
// so the position is the float's exponent field less 127 (the sign bit, set for bit 31 by the
// signed conversion, is masked off). The values are then picked (gathered on AVX2) and added
// lane by lane, each lane one row's sum, so every addition is the scalar one. A block's two
// halves are summed together, so that their chains of additions overlap.
struct QuickScorer::ExitKernels {
  static void Scalar(const QuickScorer& scorer, const uint64_t* sets, size_t first_tree, int count, int stride,
                     int lanes, double* sums) {
    AddRowsByEights(lanes, first_tree, count, stride, sums,
                    [&](int r, size_t t) { return scorer.ValueAt(t, scorer.ExitPosition(sets, t, r)); });
  }
#if defined(__x86_64__)
  __attribute__((target("avx2"))) static inline __m256i Positions(const uint32_t* words) {
    const __m256i word = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words));
    const __m256i lowest = _mm256_and_si256(word, _mm256_sub_epi32(_mm256_setzero_si256(), word));
    const __m256i exponent = _mm256_srli_epi32(_mm256_castps_si256(_mm256_cvtepi32_ps(lowest)), 23);
    return _mm256_sub_epi32(_mm256_and_si256(exponent, _mm256_set1_epi32(0xff)), _mm256_set1_epi32(127));
  }
  template <int kHalves>
  __attribute__((target("avx2"))) static inline void Avx2Halves(const QuickScorer& scorer, const uint64_t* sets,
                                                                size_t first_tree, int count, int stride, double* sums) {
    const uint32_t* words = reinterpret_cast<const uint32_t*>(sets);
    __m256d sum[2 * kHalves];
    for (int q = 0; q < 2 * kHalves; ++q) sum[q] = _mm256_loadu_pd(sums + 4 * q);
    for (int i = 0; i < count; ++i) {
      const size_t t = first_tree + static_cast<size_t>(i) * static_cast<size_t>(stride);
      const double* values = scorer.value_by_position_.data() + scorer.first_position_[t];
      for (int h = 0; h < kHalves; ++h) {
        const __m256i position = Positions(words + t * kBlock + static_cast<size_t>(h * kHalf));
        sum[2 * h] = _mm256_add_pd(sum[2 * h], _mm256_i32gather_pd(values, _mm256_castsi256_si128(position), 8));
        sum[2 * h + 1] = _mm256_add_pd(sum[2 * h + 1], _mm256_i32gather_pd(values, _mm256_extracti128_si256(position, 1), 8));
      }
    }
    for (int q = 0; q < 2 * kHalves; ++q) _mm256_storeu_pd(sums + 4 * q, sum[q]);
  }
  // On AVX-512 a tree's values are read whole rather than gathered, two registers' worth (16
  // values) or four (32): a two-register permute picks each lane's value by its position's low
  // four bits, and with 32 values the position's bit 4 chooses between two such picks.
  template <int kHalves, int kValues>
  __attribute__((target("avx512f"))) static inline void Avx512Halves(const QuickScorer& scorer, const uint64_t* sets,
                                                                     size_t first_tree, int count, int stride,
                                                                     double* sums) {
    const uint32_t* words = reinterpret_cast<const uint32_t*>(sets);
    __m512d sum[kHalves];
    for (int h = 0; h < kHalves; ++h) sum[h] = _mm512_loadu_pd(sums + h * kHalf);
    for (int i = 0; i < count; ++i) {
      const size_t t = first_tree + static_cast<size_t>(i) * static_cast<size_t>(stride);
      const double* values = scorer.value_by_position_.data() + scorer.first_position_[t];
      const __m512d first = _mm512_loadu_pd(values), second = _mm512_loadu_pd(values + 8);
      for (int h = 0; h < kHalves; ++h) {
        const __m512i position = _mm512_cvtepi32_epi64(Positions(words + t * kBlock + static_cast<size_t>(h * kHalf)));
        __m512d value = _mm512_permutex2var_pd(first, position, second);
        if constexpr (kValues == 32) {
          const __m512d upper = _mm512_permutex2var_pd(_mm512_loadu_pd(values + 16), position, _mm512_loadu_pd(values + 24));
          value = _mm512_mask_blend_pd(_mm512_test_epi64_mask(position, _mm512_set1_epi64(16)), value, upper);
        }
        sum[h] = _mm512_add_pd(sum[h], value);
      }
    }
    for (int h = 0; h < kHalves; ++h) _mm512_storeu_pd(sums + h * kHalf, sum[h]);
  }
  __attribute__((target("avx2"))) static void Avx2(const QuickScorer& scorer, const uint64_t* sets, size_t first_tree,
                                                   int count, int stride, int lanes, double* sums) {
    lanes == kHalf ? Avx2Halves<1>(scorer, sets, first_tree, count, stride, sums)
                   : Avx2Halves<2>(scorer, sets, first_tree, count, stride, sums);
  }
  __attribute__((target("avx512f"))) static void Avx512(const QuickScorer& scorer, const uint64_t* sets,
                                                        size_t first_tree, int count, int stride, int lanes,
                                                        double* sums) {
    if (scorer.most_leaves_ <= 16) {
      lanes == kHalf ? Avx512Halves<1, 16>(scorer, sets, first_tree, count, stride, sums)
                     : Avx512Halves<2, 16>(scorer, sets, first_tree, count, stride, sums);
    } else {
      lanes == kHalf ? Avx512Halves<1, 32>(scorer, sets, first_tree, count, stride, sums)
                     : Avx512Halves<2, 32>(scorer, sets, first_tree, count, stride, sums);
    }
  }
#endif
};

void QuickScorer::AddExitValues(const uint64_t* sets, size_t first_tree, int count, int stride, int lanes,
                                double* sums) const {
#if defined(__x86_64__)
  if (narrow_ && simd_ == Simd::kAvx512) return ExitKernels::Avx512(*this, sets, first_tree, count, stride, lanes, sums);
  if (narrow_ && simd_ == Simd::kAvx2) return ExitKernels::Avx2(*this, sets, first_tree, count, stride, lanes, sums);
#endif
  ExitKernels::Scalar(*this, sets, first_tree, count, stride, lanes, sums);
}

}  // namespace engine
}  // namespace treescore
