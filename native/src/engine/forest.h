// treescore's own view of a LightGBM model: the trees as flat arrays, the objective's output
// transform, and what prediction needs from the header. Built once from the model text, which
// treescore's validator (ModelText.scala) has already checked; Parse still refuses what it
// cannot evaluate (linear trees) and any text it cannot read, with std::invalid_argument.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace treescore {
namespace engine {

// decision_type bits, as LightGBM's tree.h defines them.
constexpr uint8_t kCategoricalMask = 1;
constexpr uint8_t kDefaultLeftMask = 2;
enum class MissingType : uint8_t { kNone = 0, kZero = 1, kNaN = 2 };

struct Tree {
  int num_leaves = 1;
  std::vector<int> left_child, right_child, split_feature;  // per internal node; a leaf is ~index
  std::vector<double> threshold;                            // a categorical node holds its split's index
  std::vector<uint8_t> decision_type;
  std::vector<int> cat_boundaries;      // categorical split i's words: [cat_boundaries[i], cat_boundaries[i+1])
  std::vector<uint32_t> cat_threshold;  // bitset words
  std::vector<double> leaf_value;
};

// The objective's transform from raw score to prediction (src/objective/*).
enum class Transform {
  kIdentity,
  kSigmoid,        // binary, multiclassova: 1 / (1 + exp(-sigmoid * x)); cross_entropy with sigmoid 1
  kLog1pExp,       // cross_entropy_lambda: log1p(exp(x))
  kExp,            // poisson, gamma, tweedie
  kSoftmax,        // multiclass
  kSignedSquare,   // regression with sqrt: sign(x) * x * x
};

struct Forest {
  int num_features = 0;
  int num_classes = 1;
  int trees_per_iteration = 1;
  bool average_output = false;  // random forest mode
  Transform transform = Transform::kIdentity;
  double sigmoid = 1.0;
  std::vector<Tree> trees;

  int num_iterations() const { return static_cast<int>(trees.size()) / trees_per_iteration; }

  static Forest Parse(const std::string& model_text);
};

// LightGBM's own decimal reader (Common::Atof) for numbers it writes with %g, such as an
// objective's sigmoid: digits accumulated, then scaled, in LightGBM's order, so a value reads
// back to the same double LightGBM uses, which a correctly rounded strtod does not promise.
double ReadLightGbmDecimal(const std::string& text);

}  // namespace engine
}  // namespace treescore
