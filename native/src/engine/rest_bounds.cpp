#include "rest_bounds.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "model/decision.h"

namespace treescore {
namespace engine {
namespace {

// The features conditioned on, at most: each costs every row a bin search and a lookup per
// stage, and past the features most trees start with, few trees are left to tighten.
constexpr size_t kMaxConditioned = 8;

bool IsNumerical(const model::Node& node) { return node.decision.split == model::Split::kNumerical; }

// The first node, breadth first, that splits numerically on a feature `wanted` holds; -1 if none.
int FirstNumericalFeature(const model::Tree& tree, const std::vector<bool>& wanted) {
  std::vector<int> queue = {0};
  for (size_t i = 0; i < queue.size() && !tree.nodes.empty(); ++i) {
    const model::Node& node = tree.nodes[static_cast<size_t>(queue[i])];
    if (IsNumerical(node) && wanted[static_cast<size_t>(node.feature)]) return node.feature;
    for (int child : {node.left, node.right}) {
      if (child >= 0) queue.push_back(child);
    }
  }
  return -1;
}

// The tree's distinct numerical thresholds on feature f, inclusive (decision.h), ascending.
std::vector<double> Thresholds(const model::Tree& tree, int f) {
  std::vector<double> out;
  for (const model::Node& node : tree.nodes) {
    if (node.feature == f && IsNumerical(node)) out.push_back(model::InclusiveThreshold(node));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The largest (upper) or smallest leaf a value of feature f in bin `bin` of the tree's own
// thresholds can reach: (thresholds[bin-1], thresholds[bin]], above them all for the last bin,
// any value for bin thresholds.size() + 1. Nodes on other features may go either way.
double Reach(const model::Tree& tree, int f, const std::vector<double>& thresholds, size_t bin, bool upper) {
  if (tree.nodes.empty()) return tree.leaf_value[0];
  double best = upper ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  const bool any = bin > thresholds.size();
  std::vector<int> stack = {0};
  while (!stack.empty()) {
    const int node = stack.back();
    stack.pop_back();
    if (node < 0) {
      const double leaf = tree.leaf_value[static_cast<size_t>(~node)];
      best = upper ? std::max(best, leaf) : std::min(best, leaf);
      continue;
    }
    const model::Node& at_node = tree.nodes[static_cast<size_t>(node)];
    if (!any && at_node.feature == f && IsNumerical(at_node)) {
      // Every value of the bin is <= this threshold exactly when the bin's upper edge is.
      const auto at = static_cast<size_t>(
          std::lower_bound(thresholds.begin(), thresholds.end(), model::InclusiveThreshold(at_node)) - thresholds.begin());
      stack.push_back(at >= bin ? at_node.left : at_node.right);
    } else {
      stack.push_back(at_node.left);
      stack.push_back(at_node.right);
    }
  }
  return best;
}

}  // namespace

RestBounds::RestBounds(model::InputReading reading, const std::vector<const model::Tree*>& trees,
                       const std::vector<int>& stage_trees)
    : reading_(reading) {
  int num_features = 0;
  for (const model::Tree* tree : trees) {
    for (const model::Node& node : tree->nodes) num_features = std::max(num_features, node.feature + 1);
  }
  // A feature can be conditioned on if its thresholds order (none is NaN) and fit 16-bit bins.
  std::vector<bool> usable(static_cast<size_t>(num_features), true);
  std::vector<size_t> splits(static_cast<size_t>(num_features), 0);
  for (const model::Tree* tree : trees) {
    for (const model::Node& node : tree->nodes) {
      if (!IsNumerical(node)) continue;
      const auto f = static_cast<size_t>(node.feature);
      ++splits[f];
      if (std::isnan(model::InclusiveThreshold(node))) usable[f] = false;
    }
  }
  for (size_t f = 0; f < usable.size(); ++f) usable[f] = usable[f] && splits[f] + 2 <= std::numeric_limits<uint16_t>::max();
  // The features most trees start with.
  std::vector<int> starts(static_cast<size_t>(num_features), 0);
  for (const model::Tree* tree : trees) {
    const int f = FirstNumericalFeature(*tree, usable);
    if (f >= 0) ++starts[static_cast<size_t>(f)];
  }
  std::vector<int> order(static_cast<size_t>(num_features));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return starts[static_cast<size_t>(a)] > starts[static_cast<size_t>(b)]; });
  std::vector<bool> chosen(static_cast<size_t>(num_features), false);
  for (size_t i = 0; i < order.size() && i < kMaxConditioned && starts[static_cast<size_t>(order[i])] > 0; ++i) {
    chosen[static_cast<size_t>(order[i])] = true;
  }
  // Each tree to the first chosen feature it splits on; the features in the order of their index.
  std::vector<int> assigned(trees.size(), -1);
  for (size_t t = 0; t < trees.size(); ++t) assigned[t] = FirstNumericalFeature(*trees[t], chosen);
  std::vector<int> slot(static_cast<size_t>(num_features), -1);
  for (int f = 0; f < num_features; ++f) {
    if (!chosen[static_cast<size_t>(f)]) continue;
    slot[static_cast<size_t>(f)] = static_cast<int>(features_.size());
    features_.push_back(f);
  }
  conditioned_.resize(features_.size());
  std::vector<std::vector<double>> own_thresholds(trees.size());  // each assigned tree's, on its feature
  for (size_t t = 0; t < trees.size(); ++t) {
    if (assigned[t] < 0) continue;
    own_thresholds[t] = Thresholds(*trees[t], assigned[t]);
    std::vector<double>& edges = conditioned_[static_cast<size_t>(slot[static_cast<size_t>(assigned[t])])].edges;
    edges.insert(edges.end(), own_thresholds[t].begin(), own_thresholds[t].end());
  }
  for (Conditioned& c : conditioned_) {
    std::sort(c.edges.begin(), c.edges.end());
    c.edges.erase(std::unique(c.edges.begin(), c.edges.end()), c.edges.end());
  }

  // Sums from the last tree back, taken at each stage boundary.
  const size_t boundaries = stage_trees.size() + 1;
  free_upper_.assign(boundaries, 0.0);
  free_lower_.assign(boundaries, 0.0);
  any_upper_.assign(boundaries, 0.0);
  any_lower_.assign(boundaries, 0.0);
  magnitude_.assign(boundaries, 0.0);
  trees_.assign(boundaries, 0);
  for (Conditioned& c : conditioned_) {
    c.upper.assign(boundaries * c.bins(), 0.0);
    c.lower.assign(boundaries * c.bins(), 0.0);
  }
  size_t t = trees.size();
  for (size_t s = stage_trees.size(); s-- > 0;) {
    free_upper_[s] = free_upper_[s + 1];
    free_lower_[s] = free_lower_[s + 1];
    any_upper_[s] = any_upper_[s + 1];
    any_lower_[s] = any_lower_[s + 1];
    magnitude_[s] = magnitude_[s + 1];
    trees_[s] = trees_[s + 1] + stage_trees[s];
    for (Conditioned& c : conditioned_) {
      std::copy_n(c.upper.begin() + static_cast<std::ptrdiff_t>((s + 1) * c.bins()), c.bins(), c.upper.begin() + static_cast<std::ptrdiff_t>(s * c.bins()));
      std::copy_n(c.lower.begin() + static_cast<std::ptrdiff_t>((s + 1) * c.bins()), c.bins(), c.lower.begin() + static_cast<std::ptrdiff_t>(s * c.bins()));
    }
    for (int i = 0; i < stage_trees[s]; ++i) {
      const model::Tree& tree = *trees[--t];
      const auto [least, most] = std::minmax_element(tree.leaf_value.begin(), tree.leaf_value.end());
      any_upper_[s] += *most;
      any_lower_[s] += *least;
      magnitude_[s] += std::max(std::fabs(*most), std::fabs(*least));
      if (assigned[t] < 0) {
        free_upper_[s] += *most;
        free_lower_[s] += *least;
        continue;
      }
      // The tree's reach from each bin of its own thresholds, spread over the feature's bins:
      // bin j of the feature lies within the tree's bin holding its upper edge.
      Conditioned& c = conditioned_[static_cast<size_t>(slot[static_cast<size_t>(assigned[t])])];
      const std::vector<double>& own = own_thresholds[t];
      std::vector<double> high(own.size() + 2), low(own.size() + 2);
      for (size_t b = 0; b < high.size(); ++b) {
        high[b] = Reach(tree, assigned[t], own, b, true);
        low[b] = Reach(tree, assigned[t], own, b, false);
      }
      for (size_t j = 0; j < c.bins(); ++j) {
        const size_t b = j == c.bins() - 1 ? own.size() + 1  // missing
                         : j == c.edges.size() ? own.size()
                                               : static_cast<size_t>(std::lower_bound(own.begin(), own.end(), c.edges[j]) - own.begin());
        c.upper[s * c.bins() + j] += high[b];
        c.lower[s * c.bins() + j] += low[b];
      }
    }
  }
}

uint16_t RestBounds::Bin(size_t i, double value) const {
  const std::vector<double>& edges = conditioned_[i].edges;
  // A value a node might send its default way (not ordinary, as read) goes to the missing bin.
  value = model::ReadInput(reading_, value);
  if (!model::IsOrdinary(value)) return static_cast<uint16_t>(edges.size() + 1);
  // std::lower_bound without its branches, which rows' values mispredict half the time.
  const double* first = edges.data();
  size_t n = edges.size();
  if (n == 0) return 0;
  while (n > 1) {
    const size_t half = n / 2;
    first += static_cast<size_t>(first[half] < value) * half;
    n -= half;
  }
  return static_cast<uint16_t>(first - edges.data() + (*first < value));
}

double RestBounds::Bound(size_t s, const uint16_t* bins, bool upper) const {
  if (bins == nullptr) return upper ? any_upper_[s] : any_lower_[s];
  double sum = upper ? free_upper_[s] : free_lower_[s];
  for (size_t i = 0; i < conditioned_.size(); ++i) {
    const Conditioned& c = conditioned_[i];
    sum += (upper ? c.upper : c.lower)[s * c.bins() + bins[i]];
  }
  return sum;
}

}  // namespace engine
}  // namespace treescore
