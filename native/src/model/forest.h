// The one representation of a tree ensemble inside treescore: every engine (the node walk,
// QuickScorer, top-K's bounds, TreeSHAP) is built from a Forest, and every model format has a
// loader that produces one (lightgbm_text.h). Nothing here is shaped by a file format: a node
// states its test, where missing values go and its cover in plain terms; decision.h is the rule
// that reads them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace treescore {
namespace model {

// Which iterations of a forest take part in a score: [start_iteration, start_iteration +
// num_iterations), clamped to the forest as LightGBM clamps them; num_iterations <= 0 means every
// iteration from start_iteration on.
struct IterationRange {
  int start_iteration = 0;
  int num_iterations = -1;
};

// How a forest reads a row's values before any of its trees sees them.
enum class InputReading : uint8_t {
  kLightGbmZeroing,  // LightGBM's C API: |x| <= 1e-35f (so +-0 and subnormals) reads as +0.0 (decision.h)
};

// Which way a numerical node sends an ordinary value.
enum class Comparison : uint8_t {
  kLeftIfLessOrEqual,  // x <= threshold goes left (LightGBM)
  kLeftIfLess,         // x < threshold goes left (XGBoost)
};

// Which values a numerical node sends its default way instead of comparing them.
enum class Missing : uint8_t {
  kNone,  // none: a NaN is compared as if it were 0.0
  kZero,  // a zero, and a NaN, which reads as zero
  kNaN,   // a NaN
};

enum class Split : uint8_t { kNumerical, kCategorical };

// A node's test, apart from its threshold or category set: four bytes an engine can keep per node.
struct Decision {
  Split split = Split::kNumerical;
  Comparison comparison = Comparison::kLeftIfLessOrEqual;  // numerical nodes
  Missing missing = Missing::kNone;                         // numerical nodes
  bool default_left = false;                                // numerical nodes: where a missing value goes
};

struct Node {
  Decision decision;
  int32_t feature = 0;
  double threshold = 0.0;  // numerical nodes
  // Categorical nodes: the categories that go left, a bitset of 32-bit words in the tree's
  // category_words[first_category_word, + num_category_words); every other value goes right.
  uint32_t first_category_word = 0;
  uint32_t num_category_words = 0;
  int32_t left = 0, right = 0;  // a node of the same tree, or ~leaf
  double cover = 0.0;           // training rows that reached the node (TreeSHAP weighs paths by it)
};

// A tree's linear leaves (LightGBM's linear_tree): leaf l's value for a row x is
// constant[l] + coefficient[i] * x[feature[i]] added in order over its terms
// i in [first_term[l], first_term[l + 1]), each product rounded before its addition; where any of
// those features is NaN, it is the leaf's plain leaf_value instead (linear_leaf.h computes it).
struct LinearLeaves {
  std::vector<double> constant;       // per leaf
  std::vector<uint32_t> first_term;   // per leaf, and one past the last term
  std::vector<int32_t> feature;       // per term
  std::vector<double> coefficient;    // per term
};

struct Tree {
  std::vector<Node> nodes;  // the root first; none for a tree that never split
  std::vector<double> leaf_value;
  std::vector<double> leaf_cover;  // training rows per leaf
  std::vector<uint32_t> category_words;
  LinearLeaves linear;  // empty where the leaves are constants

  int num_leaves() const { return static_cast<int>(leaf_value.size()); }
  bool is_linear() const { return !linear.constant.empty(); }
  // Calls read(feature) for every feature a node tests or a linear leaf reads, possibly more than once.
  template <typename Read>
  void ForEachFeatureRead(Read read) const {
    for (const Node& node : nodes) read(node.feature);
    for (int32_t f : linear.feature) read(f);
  }
};

// From a class's sum of leaf values to its prediction, in double through the process's libm.
enum class OutputTransform : uint8_t {
  kIdentity,
  kSigmoid,       // 1 / (1 + exp(-sigmoid * x))
  kLog1pExp,      // log1p(exp(x))
  kExp,           // exp(x)
  kSoftmax,       // over the classes: max first, exp(x - max), a sequential sum, then division
  kSignedSquare,  // sign(x) * x * x
};

struct Forest {
  int num_features = 0;         // the width of a row the model reads
  int num_classes = 1;          // outputs per row
  int trees_per_iteration = 1;  // one per class, tree i * trees_per_iteration + k adding to class k
  bool average_output = false;  // predictions divide each class's sum by the iterations used
  // Each class's sum starts here, then adds its trees' leaves as a left fold in iteration order.
  double base_score = 0.0;
  OutputTransform transform = OutputTransform::kIdentity;
  double sigmoid = 1.0;  // kSigmoid's scale
  InputReading input_reading = InputReading::kLightGbmZeroing;
  std::vector<int> features_read;  // ascending: every feature some node tests or some linear leaf reads
  bool has_covers = false;         // whether nodes and leaves carry their training counts
  std::vector<Tree> trees;

  int num_iterations() const { return static_cast<int>(trees.size()) / trees_per_iteration; }
  bool has_linear_trees() const;
  // The same forest over trees [first_tree, first_tree + num_trees) alone: every setting as it
  // is, and the features those trees read.
  Forest Slice(size_t first_tree, size_t num_trees) const;
};

// The features some node of `trees` tests or some linear leaf reads, ascending.
std::vector<int> FeaturesRead(const std::vector<Tree>& trees, int num_features);

}  // namespace model
}  // namespace treescore
