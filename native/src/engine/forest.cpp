#include "forest.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

namespace treescore {
namespace engine {
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

template <typename T>
std::vector<T> Numbers(const std::unordered_map<std::string, std::string>& fields, const std::string& key,
                       size_t count, const std::string& where) {
  const auto found = fields.find(key);
  if (found == fields.end()) Fail(where + " has no " + key);
  const auto parts = Split(found->second, ' ');
  if (parts.size() != count) Fail(where + " has " + std::to_string(parts.size()) + " values in " + key);
  std::vector<T> values;
  values.reserve(count);
  for (const auto& part : parts) {
    if constexpr (std::is_floating_point<T>::value) {
      values.push_back(ParseDouble(part, where + " " + key));
    } else {
      values.push_back(static_cast<T>(ParseInteger(part, where + " " + key)));
    }
  }
  return values;
}

Tree ParseTree(const std::unordered_map<std::string, std::string>& fields, const std::string& where) {
  Tree tree;
  const auto scalar = [&](const std::string& key) {
    const auto found = fields.find(key);
    if (found == fields.end()) Fail(where + " has no " + key);
    return ParseInteger(found->second, where + " " + key);
  };
  tree.num_leaves = static_cast<int>(scalar("num_leaves"));
  const auto linear = fields.find("is_linear");
  if (linear != fields.end() && linear->second != "0") Fail(where + " is a linear tree");
  tree.leaf_value = Numbers<double>(fields, "leaf_value", tree.num_leaves, where);
  if (tree.num_leaves < 1) Fail(where + " has no leaves");
  if (tree.num_leaves == 1) return tree;
  const size_t internal = static_cast<size_t>(tree.num_leaves - 1);
  tree.left_child = Numbers<int>(fields, "left_child", internal, where);
  tree.right_child = Numbers<int>(fields, "right_child", internal, where);
  tree.split_feature = Numbers<int>(fields, "split_feature", internal, where);
  tree.threshold = Numbers<double>(fields, "threshold", internal, where);
  if (fields.count("decision_type")) {
    for (int d : Numbers<int>(fields, "decision_type", internal, where)) tree.decision_type.push_back(static_cast<uint8_t>(d));
  } else {
    tree.decision_type.assign(internal, 0);
  }
  const int num_cat = static_cast<int>(scalar("num_cat"));
  if (num_cat > 0) {
    tree.cat_boundaries = Numbers<int>(fields, "cat_boundaries", static_cast<size_t>(num_cat) + 1, where);
    tree.cat_threshold = Numbers<uint32_t>(fields, "cat_threshold", static_cast<size_t>(tree.cat_boundaries.back()), where);
  }
  return tree;
}

// treescore's validator has checked the text already; these checks keep the engine from reading
// out of bounds or walking forever on any text that reaches it by another way.
void CheckTree(const Tree& tree, int num_features, const std::string& where) {
  const int internal = tree.num_leaves - 1;
  std::vector<bool> seen_node(static_cast<size_t>(std::max(internal, 0))), seen_leaf(static_cast<size_t>(tree.num_leaves));
  std::vector<int> stack = {0};
  while (internal > 0 && !stack.empty()) {
    const int node = stack.back();
    stack.pop_back();
    if (seen_node[node]) Fail(where + " reaches node " + std::to_string(node) + " twice");
    seen_node[node] = true;
    if (tree.split_feature[node] < 0 || tree.split_feature[node] >= num_features) {
      Fail(where + " splits on a feature outside the model");
    }
    if (tree.decision_type[node] & kCategoricalMask) {
      const double split = tree.threshold[node];
      if (!(split >= 0) || split != static_cast<double>(static_cast<int>(split)) ||
          split + 1 >= static_cast<double>(tree.cat_boundaries.size())) {
        Fail(where + " has a categorical split outside its cat_boundaries");
      }
    }
    for (int child : {tree.left_child[node], tree.right_child[node]}) {
      if (child >= 0) {
        if (child >= internal) Fail(where + " has a child outside its nodes");
        stack.push_back(child);
      } else {
        const int leaf = ~child;
        if (leaf >= tree.num_leaves || seen_leaf[leaf]) Fail(where + " has a leaf reached twice or outside its leaves");
        seen_leaf[leaf] = true;
      }
    }
  }
  for (size_t i = 1; i < tree.cat_boundaries.size(); ++i) {
    if (tree.cat_boundaries[0] != 0 || tree.cat_boundaries[i] < tree.cat_boundaries[i - 1]) {
      Fail(where + " has cat_boundaries that do not rise from 0");
    }
  }
}

void ParseObjective(const std::string& line, Forest* forest) {
  const auto tokens = Split(line, ' ');
  if (tokens.empty()) return;
  const std::string& name = tokens[0];
  for (size_t i = 1; i < tokens.size(); ++i) {
    const auto colon = tokens[i].find(':');
    if (tokens[i] == "sqrt") forest->transform = Transform::kSignedSquare;
    if (colon != std::string::npos && tokens[i].substr(0, colon) == "sigmoid") {
      forest->sigmoid = ReadLightGbmDecimal(tokens[i].substr(colon + 1));
    }
  }
  if (name == "binary" || name == "multiclassova") {
    forest->transform = Transform::kSigmoid;
  } else if (name == "cross_entropy") {
    forest->transform = Transform::kSigmoid;
    forest->sigmoid = 1.0;
  } else if (name == "cross_entropy_lambda") {
    forest->transform = Transform::kLog1pExp;
  } else if (name == "poisson" || name == "gamma" || name == "tweedie") {
    forest->transform = Transform::kExp;
  } else if (name == "multiclass") {
    forest->transform = Transform::kSoftmax;
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

Forest Forest::Parse(const std::string& model_text) {
  Forest forest;
  std::istringstream in(model_text);
  std::string line;
  std::unordered_map<std::string, std::string> header;
  bool in_trees = false;
  std::unordered_map<std::string, std::string> fields;
  std::string tree_label;
  const auto finish_tree = [&]() {
    if (tree_label.empty()) return;
    forest.trees.push_back(ParseTree(fields, "tree " + std::to_string(forest.trees.size())));
    fields.clear();
    tree_label.clear();
  };
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line == "end of trees") break;
    if (line.rfind("Tree=", 0) == 0) {
      finish_tree();
      in_trees = true;
      tree_label = line;
      continue;
    }
    if (line.empty()) continue;
    const auto eq = line.find('=');
    const std::string key = line.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : line.substr(eq + 1);
    (in_trees ? fields : header)[key] = value;
  }
  finish_tree();
  const auto header_int = [&](const std::string& key, long long fallback) {
    const auto found = header.find(key);
    return found == header.end() ? fallback : ParseInteger(found->second, "the header's " + key);
  };
  forest.num_features = static_cast<int>(header_int("max_feature_idx", -1) + 1);
  forest.num_classes = static_cast<int>(header_int("num_class", 1));
  forest.trees_per_iteration = static_cast<int>(header_int("num_tree_per_iteration", forest.num_classes));
  forest.average_output = header.count("average_output") > 0;
  if (header.count("objective")) ParseObjective(header.at("objective"), &forest);
  if (forest.num_features <= 0 || forest.trees_per_iteration <= 0 || forest.trees.empty() ||
      forest.trees.size() % static_cast<size_t>(forest.trees_per_iteration) != 0) {
    Fail("the model text has no whole iterations of trees");
  }
  if (forest.num_classes < 1 || forest.trees_per_iteration != forest.num_classes) {
    Fail("the model text's num_tree_per_iteration differs from its num_class");
  }
  for (size_t t = 0; t < forest.trees.size(); ++t) {
    CheckTree(forest.trees[t], forest.num_features, "tree " + std::to_string(t));
  }
  return forest;
}

}  // namespace engine
}  // namespace treescore
