#include "lightgbm_text.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <utility>

namespace treescore {
namespace model {
namespace {

[[noreturn]] void Fail(const std::string& problem) {
  throw std::invalid_argument("treescore engine: " + problem);
}

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  if (text.empty()) return parts;
  std::string::size_type start = 0;
  while (true) {
    const auto end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

// Thresholds and leaf values are written with 17 significant digits (or as inf/nan), so a
// correctly rounded strtod reads them back exactly.
double ParseDouble(const std::string& text, const std::string& what) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0') Fail(what + " has '" + text + "', which is not a number");
  return value;
}

long long ParseInteger(const std::string& text, const std::string& what) {
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0') Fail(what + " has '" + text + "', which is not an integer");
  return value;
}

// Each of `parts` read as a T, or a failure naming `what`.
template <typename T>
std::vector<T> Parse(const std::vector<std::string>& parts, const std::string& what) {
  std::vector<T> values;
  values.reserve(parts.size());
  for (const auto& part : parts) {
    if constexpr (std::is_floating_point<T>::value) {
      values.push_back(ParseDouble(part, what));
    } else {
      values.push_back(static_cast<T>(ParseInteger(part, what)));
    }
  }
  return values;
}

template <typename T>
std::vector<T> Numbers(const std::unordered_map<std::string, std::string>& fields, const std::string& key,
                       size_t count, const std::string& where) {
  const auto found = fields.find(key);
  if (found == fields.end()) Fail(where + " has no " + key);
  const auto parts = Split(found->second, ' ');
  if (parts.size() != count) Fail(where + " has " + std::to_string(parts.size()) + " values in " + key);
  return Parse<T>(parts, where + " " + key);
}

// The counts in `key` when the tree has exactly `count` of them, all numbers; false otherwise.
bool Counts(const std::unordered_map<std::string, std::string>& fields, const std::string& key, size_t count,
            std::vector<double>* out) {
  if (count == 0) return true;
  try {
    *out = Numbers<double>(fields, key, count, key);
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

// Every node and leaf is reached exactly once from the root, so a walk ends and reads nothing
// outside the tree.
void CheckReachable(const Tree& tree, const std::string& where) {
  const int internal = static_cast<int>(tree.nodes.size());
  std::vector<bool> seen_node(tree.nodes.size()), seen_leaf(static_cast<size_t>(tree.num_leaves()));
  std::vector<int> stack = {0};
  while (!stack.empty()) {
    const int at = stack.back();
    stack.pop_back();
    if (seen_node[static_cast<size_t>(at)]) Fail(where + " reaches node " + std::to_string(at) + " twice");
    seen_node[static_cast<size_t>(at)] = true;
    for (int child : {tree.nodes[static_cast<size_t>(at)].left, tree.nodes[static_cast<size_t>(at)].right}) {
      if (child >= 0) {
        if (child >= internal) Fail(where + " has a child outside its nodes");
        stack.push_back(child);
      } else {
        const int leaf = ~child;
        if (leaf >= tree.num_leaves() || seen_leaf[static_cast<size_t>(leaf)]) {
          Fail(where + " has a leaf reached twice or outside its leaves");
        }
        seen_leaf[static_cast<size_t>(leaf)] = true;
      }
    }
  }
}

// LightGBM's decision_type bits (tree.h): bit 0 categorical, bit 1 default left, bits 2-3 the
// missing type. They are read here and nowhere else.
constexpr int kCategoricalBit = 1;
constexpr int kDefaultLeftBit = 2;

Decision DecisionOf(int bits, const std::string& where) {
  Decision decision;
  decision.comparison = Comparison::kLeftIfLessOrEqual;
  decision.split = (bits & kCategoricalBit) ? Split::kCategorical : Split::kNumerical;
  decision.default_left = (bits & kDefaultLeftBit) != 0;
  switch ((bits >> 2) & 3) {
    case 0: decision.missing = Missing::kNone; break;
    case 1: decision.missing = Missing::kZero; break;
    case 2: decision.missing = Missing::kNaN; break;
    default: Fail(where + " has decision_type " + std::to_string(bits) + ", whose missing type LightGBM does not define");
  }
  return decision;
}

std::string Field(const std::unordered_map<std::string, std::string>& fields, const std::string& key,
                  const std::string& where) {
  const auto found = fields.find(key);
  if (found == fields.end()) Fail(where + " has no " + key);
  return found->second;
}

// A field of `count` numbers that LightGBM writes with extra spaces between leaves.
template <typename T>
std::vector<T> SpacedNumbers(const std::unordered_map<std::string, std::string>& fields, const std::string& key,
                             size_t count, const std::string& where) {
  std::vector<std::string> parts;
  std::istringstream words(Field(fields, key, where));
  for (std::string word; words >> word;) parts.push_back(word);
  if (parts.size() != count) {
    Fail(where + " has " + std::to_string(parts.size()) + " values in " + key + ", expected " + std::to_string(count) +
         " (the sum of num_features)");
  }
  return Parse<T>(parts, where + " " + key);
}

// A linear tree's leaves: leaf_const and num_features per leaf, then the leaves' features and
// coefficients one leaf after another (src/io/tree.cpp).
LinearLeaves ReadLinearLeaves(const std::unordered_map<std::string, std::string>& fields, int num_leaves,
                              int num_features, const std::string& where) {
  LinearLeaves linear;
  linear.constant = Numbers<double>(fields, "leaf_const", static_cast<size_t>(num_leaves), where);
  const auto counts = Numbers<int>(fields, "num_features", static_cast<size_t>(num_leaves), where);
  linear.first_term.push_back(0);
  for (int count : counts) {
    if (count < 0 || count > num_features) {
      Fail(where + " has num_features " + std::to_string(count) + ", outside 0.." + std::to_string(num_features));
    }
    linear.first_term.push_back(linear.first_term.back() + static_cast<uint32_t>(count));
  }
  const size_t terms = linear.first_term.back();
  linear.feature = SpacedNumbers<int32_t>(fields, "leaf_features", terms, where);
  linear.coefficient = SpacedNumbers<double>(fields, "leaf_coeff", terms, where);
  for (int32_t f : linear.feature) {
    if (f < 0 || f >= num_features) Fail(where + " has a linear leaf reading feature " + std::to_string(f) + ", outside the model");
  }
  return linear;
}

// One tree's fields as the model text has them; a node's children are node indices, or ~leaf.
// Counts (covers) are optional: hand-written texts may lack them.
Tree ReadTree(const std::unordered_map<std::string, std::string>& fields, int num_features, bool* has_covers,
              const std::string& where) {
  const int num_leaves = static_cast<int>(ParseInteger(Field(fields, "num_leaves", where), where + " num_leaves"));
  if (num_leaves < 1) Fail(where + " has no leaves");
  Tree tree;
  tree.leaf_value = Numbers<double>(fields, "leaf_value", static_cast<size_t>(num_leaves), where);
  const auto linear = fields.find("is_linear");
  if (linear != fields.end() && ParseInteger(linear->second, where + " is_linear") != 0) {
    tree.linear = ReadLinearLeaves(fields, num_leaves, num_features, where);
  }
  // Counts only weigh TreeSHAP's paths; prediction never reads them, so counts that do not
  // read as one per leaf and node leave the forest without covers rather than refuse it.
  // LightGBM writes an empty leaf_count for a tree that never split, whose count no path needs.
  if (num_leaves == 1) {
    if (!Counts(fields, "leaf_count", 1, &tree.leaf_cover)) tree.leaf_cover = {0.0};
    return tree;
  }
  std::vector<double> cover;
  const bool counted = Counts(fields, "leaf_count", static_cast<size_t>(num_leaves), &tree.leaf_cover) &&
                       Counts(fields, "internal_count", static_cast<size_t>(num_leaves - 1), &cover);
  *has_covers = *has_covers && counted;
  if (!counted) tree.leaf_cover.clear();
  const size_t internal = static_cast<size_t>(num_leaves - 1);
  const auto left = Numbers<int>(fields, "left_child", internal, where);
  const auto right = Numbers<int>(fields, "right_child", internal, where);
  const auto feature = Numbers<int>(fields, "split_feature", internal, where);
  const auto threshold = Numbers<double>(fields, "threshold", internal, where);
  const auto bits = fields.count("decision_type") ? Numbers<int>(fields, "decision_type", internal, where)
                                                  : std::vector<int>(internal, 0);
  if (!counted) cover.assign(internal, 0.0);
  const int num_cat = static_cast<int>(ParseInteger(Field(fields, "num_cat", where), where + " num_cat"));
  std::vector<int> cat_boundaries;
  if (num_cat > 0) {
    cat_boundaries = Numbers<int>(fields, "cat_boundaries", static_cast<size_t>(num_cat) + 1, where);
    if (cat_boundaries[0] != 0 || !std::is_sorted(cat_boundaries.begin(), cat_boundaries.end())) {
      Fail(where + " has cat_boundaries that do not rise from 0");
    }
    tree.category_words = Numbers<uint32_t>(fields, "cat_threshold", static_cast<size_t>(cat_boundaries.back()), where);
  }
  for (size_t n = 0; n < internal; ++n) {
    Node node;
    node.decision = DecisionOf(bits[n], where + " node " + std::to_string(n));
    node.feature = feature[n];
    node.left = left[n];
    node.right = right[n];
    node.cover = cover[n];
    if (node.feature < 0 || node.feature >= num_features) Fail(where + " splits on a feature outside the model");
    if (node.decision.split == Split::kCategorical) {
      // A categorical node's threshold is the index of its split in cat_boundaries.
      const double split = threshold[n];
      if (!(split >= 0) || split != static_cast<double>(static_cast<int>(split)) ||
          split + 1 >= static_cast<double>(cat_boundaries.size())) {
        Fail(where + " has a categorical split outside its cat_boundaries");
      }
      const auto at = static_cast<size_t>(split);
      node.first_category_word = static_cast<uint32_t>(cat_boundaries[at]);
      node.num_category_words = static_cast<uint32_t>(cat_boundaries[at + 1] - cat_boundaries[at]);
    } else {
      node.threshold = threshold[n];
    }
    tree.nodes.push_back(node);
  }
  CheckReachable(tree, where);
  return tree;
}

// The objective line's transform (LightGBM's src/objective/*).
void ReadObjective(const std::string& line, Forest* forest) {
  const auto tokens = Split(line, ' ');
  if (tokens.empty()) return;
  const std::string& name = tokens[0];
  for (size_t i = 1; i < tokens.size(); ++i) {
    const auto colon = tokens[i].find(':');
    if (tokens[i] == "sqrt") forest->transform = OutputTransform::kSignedSquare;
    if (colon != std::string::npos && tokens[i].substr(0, colon) == "sigmoid") {
      forest->sigmoid = ReadLightGbmDecimal(tokens[i].substr(colon + 1));
    }
  }
  if (name == "binary" || name == "multiclassova") {
    forest->transform = OutputTransform::kSigmoid;
  } else if (name == "cross_entropy") {
    forest->transform = OutputTransform::kSigmoid;
    forest->sigmoid = 1.0;
  } else if (name == "cross_entropy_lambda") {
    forest->transform = OutputTransform::kLog1pExp;
  } else if (name == "poisson" || name == "gamma" || name == "tweedie") {
    forest->transform = OutputTransform::kExp;
  } else if (name == "multiclass") {
    forest->transform = OutputTransform::kSoftmax;
  }
}

}  // namespace

double ReadLightGbmDecimal(const std::string& text) {
  const char* p = text.c_str();
  double sign = 1.0;
  if (*p == '-') { sign = -1.0; ++p; } else if (*p == '+') { ++p; }
  double value = 0.0;
  for (; *p >= '0' && *p <= '9'; ++p) value = value * 10.0 + (*p - '0');
  if (*p == '.') {
    ++p;
    double fraction = 0.0;
    int digits = 0;
    for (; *p >= '0' && *p <= '9'; ++p, ++digits) fraction = (*p - '0') + fraction * 10.0;
    double power = 1.0;
    for (int i = 0; i < digits; ++i) power *= 10.0;  // exact up to 10^22, far beyond %g's digits
    value += fraction / power;
  }
  bool negative_exponent = false;
  double scale = 1.0;
  if (*p == 'e' || *p == 'E') {
    ++p;
    if (*p == '-') { negative_exponent = true; ++p; } else if (*p == '+') { ++p; }
    unsigned exponent = 0;
    for (; *p >= '0' && *p <= '9'; ++p) exponent = exponent * 10 + static_cast<unsigned>(*p - '0');
    if (exponent > 308) exponent = 308;
    for (; exponent >= 50; exponent -= 50) scale *= 1e50;
    for (; exponent >= 8; exponent -= 8) scale *= 1e8;
    for (; exponent > 0; --exponent) scale *= 10.0;
  }
  if (*p != '\0') Fail("'" + text + "' is not a decimal number");
  return sign * (negative_exponent ? value / scale : value * scale);
}

Forest ReadLightGbmText(const std::string& model_text) {
  // Each tree is read as soon as its section ends, so that a load holds the text's fields one
  // tree at a time beside the trees it has read, not every tree's at once.
  std::unordered_map<std::string, std::string> header;
  std::unordered_map<std::string, std::string> fields;  // the "Tree=" section being read
  Forest forest;
  forest.has_covers = true;
  bool in_trees = false;
  const auto read_header = [&] {
    const auto header_int = [&](const std::string& key, long long fallback) {
      const auto found = header.find(key);
      return found == header.end() ? fallback : ParseInteger(found->second, "the header's " + key);
    };
    forest.num_features = static_cast<int>(header_int("max_feature_idx", -1) + 1);
    forest.num_classes = static_cast<int>(header_int("num_class", 1));
    forest.trees_per_iteration = static_cast<int>(header_int("num_tree_per_iteration", forest.num_classes));
    forest.average_output = header.count("average_output") > 0;
    forest.input_reading = InputReading::kLightGbmZeroing;
    forest.base_score = 0.0;  // LightGBM folds its initial score into the first trees' leaves
    if (header.count("objective")) ReadObjective(header.at("objective"), &forest);
    if (forest.num_features <= 0 || forest.trees_per_iteration <= 0) Fail("the model text has no whole iterations of trees");
    if (forest.num_classes < 1 || forest.trees_per_iteration != forest.num_classes) {
      Fail("the model text's num_tree_per_iteration differs from its num_class");
    }
  };
  const auto read_tree = [&] {
    forest.trees.push_back(ReadTree(fields, forest.num_features, &forest.has_covers, "tree " + std::to_string(forest.trees.size())));
    fields.clear();
  };
  for (size_t start = 0; start < model_text.size();) {
    const size_t newline = model_text.find('\n', start);
    const size_t stop = newline == std::string::npos ? model_text.size() : newline;
    std::string line = model_text.substr(start, stop - start);
    start = stop + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line == "end of trees") break;
    if (line.rfind("Tree=", 0) == 0) {
      if (in_trees) {
        read_tree();
      } else {
        read_header();
        in_trees = true;
      }
      continue;
    }
    if (line.empty()) continue;
    const auto eq = line.find('=');
    const std::string key = line.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : line.substr(eq + 1);
    (in_trees ? fields : header)[key] = std::move(value);
  }
  if (!in_trees) Fail("the model text has no whole iterations of trees");
  read_tree();
  if (forest.trees.size() % static_cast<size_t>(forest.trees_per_iteration) != 0) {
    Fail("the model text has no whole iterations of trees");
  }
  forest.features_read = FeaturesRead(forest.trees, forest.num_features);
  return forest;
}

}  // namespace model
}  // namespace treescore
