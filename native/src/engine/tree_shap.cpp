#include "engine/tree_shap.h"

#include <algorithm>
#include <stdexcept>

#include "model/decision.h"

namespace treescore {
namespace engine {
namespace {

// Addends kept over all of a forest's tables (8 bytes each): beyond it, leaves replay.
constexpr size_t kMaxTableAddends = size_t{1} << 24;

// A node's or leaf's training count, as LightGBM's data_count reads it (a node, or ~leaf).
double Cover(const model::Tree& tree, int32_t index) {
  return index >= 0 ? tree.nodes[static_cast<size_t>(index)].cover : tree.leaf_cover[static_cast<size_t>(~index)];
}

// The count-weighted mean of a tree's leaves, summed in leaf order as Tree::ExpectedValue does.
double ExpectedValue(const model::Tree& tree) {
  if (tree.num_leaves() == 1) return tree.leaf_value[0];
  const double total = tree.nodes[0].cover;
  double expected = 0.0;
  for (int i = 0; i < tree.num_leaves(); ++i) {
    expected += (tree.leaf_cover[static_cast<size_t>(i)] / total) * tree.leaf_value[static_cast<size_t>(i)];
  }
  return expected;
}

}  // namespace

TreeShap::TreeShap(const model::Forest& forest) : forest_(forest) {}

int64_t TreeShap::OutputsPerRow() const {
  return static_cast<int64_t>(forest_.num_classes) * (forest_.num_features + 1);
}

int TreeShap::Replay(const model::Tree& tree, const TreeTables& tables, const Leaf& leaf, const uint8_t* hot,
                     std::vector<ShapPathElement>* path_buffer, double* addends, int32_t* features) {
  path_buffer->resize(static_cast<size_t>(leaf.depth) + 1);
  ShapPathElement* path = path_buffer->data();
  // The root's call extends the empty path with a placeholder (feature -1), as LightGBM's does.
  int depth = 0;
  ExtendShapPath(path, 0, 1, 1, -1);
  for (int32_t j = 0; j < leaf.depth; ++j) {
    const Step& step = tables.steps[leaf.first_step + static_cast<size_t>(j)];
    const model::Node& node = tree.nodes[static_cast<size_t>(step.node)];
    // The child's share of the node's rows: hot or cold, LightGBM divides its count by the node's.
    const double w = node.cover;
    const double zero = Cover(tree, step.left ? node.left : node.right) / w;
    double incoming_zero = 1;
    double incoming_one = 1;
    // A feature already on the path is unwound, and extended again for this node.
    int at = 0;
    while (at <= depth && path[at].feature != node.feature) ++at;
    if (at != depth + 1) {
      incoming_zero = path[at].zero_fraction;
      incoming_one = path[at].one_fraction;
      UnwindShapPath(path, depth, at);
      depth -= 1;
    }
    depth += 1;
    ExtendShapPath(path, depth, zero * incoming_zero, hot[j] ? incoming_one : 0, node.feature);
  }
  const double value = tree.leaf_value[static_cast<size_t>(&leaf - tables.leaves.data())];
  for (int i = 1; i <= depth; ++i) {
    const double w = UnwoundShapPathSum(path, depth, i);
    const ShapPathElement& element = path[i];
    addends[i - 1] = w * (element.one_fraction - element.zero_fraction) * value;
    if (features != nullptr) features[i - 1] = element.feature;
  }
  return depth;
}

TreeShap::TreeTables TreeShap::Tabulate(const model::Tree& tree, size_t* budget) {
  TreeTables tables;
  tables.leaves.resize(static_cast<size_t>(tree.num_leaves()));
  // Every leaf's ancestors, by a walk that keeps the current path.
  std::vector<Step> path;
  struct Pending {
    int32_t index;
    int32_t depth;
    Step from;  // the step into it (unused for the root)
  };
  std::vector<Pending> pending{{0, 0, {0, false}}};
  while (!pending.empty()) {
    const Pending at = pending.back();
    pending.pop_back();
    path.resize(static_cast<size_t>(at.depth));
    if (at.depth > 0) path.back() = at.from;
    if (at.index < 0) {
      Leaf& leaf = tables.leaves[static_cast<size_t>(~at.index)];
      leaf.depth = at.depth;
      leaf.first_step = tables.steps.size();
      tables.steps.insert(tables.steps.end(), path.begin(), path.end());
      continue;
    }
    const model::Node& node = tree.nodes[static_cast<size_t>(at.index)];
    pending.push_back({node.right, at.depth + 1, {at.index, false}});
    pending.push_back({node.left, at.depth + 1, {at.index, true}});
  }
  // Each leaf's features and element count (the same for every pattern), then its table.
  std::vector<ShapPathElement> buffer;
  std::vector<uint8_t> hot;
  std::vector<double> addends;
  for (Leaf& leaf : tables.leaves) {
    hot.assign(static_cast<size_t>(leaf.depth), 1);
    addends.resize(static_cast<size_t>(leaf.depth));
    std::vector<int32_t> features(static_cast<size_t>(leaf.depth));
    leaf.elements = Replay(tree, tables, leaf, hot.data(), &buffer, addends.data(), features.data());
    leaf.first_feature = tables.features.size();
    tables.features.insert(tables.features.end(), features.begin(), features.begin() + leaf.elements);
    if (leaf.depth > kMaxTableDepth) continue;
    const size_t patterns = size_t{1} << leaf.depth;
    const size_t size = patterns * static_cast<size_t>(leaf.elements);
    if (size > *budget) continue;
    *budget -= size;
    leaf.first_value = tables.values.size();
    tables.values.resize(tables.values.size() + size);
    for (size_t pattern = 0; pattern < patterns; ++pattern) {
      for (int32_t j = 0; j < leaf.depth; ++j) hot[static_cast<size_t>(j)] = (pattern >> j) & 1;
      Replay(tree, tables, leaf, hot.data(), &buffer,
             tables.values.data() + leaf.first_value + pattern * static_cast<size_t>(leaf.elements), nullptr);
    }
  }
  return tables;
}

void TreeShap::Build() const {
  size_t budget = kMaxTableAddends;
  tables_.reserve(forest_.trees.size());
  for (const model::Tree& tree : forest_.trees) {
    expected_value_.push_back(ExpectedValue(tree));
    tables_.push_back(tree.num_leaves() > 1 ? Tabulate(tree, &budget) : TreeTables());
  }
}

void TreeShap::Explain(const double* values, int num_rows, size_t first_tree, size_t num_trees, Scratch* scratch,
                       double* out) const {
  if (!forest_.has_covers) {
    throw std::invalid_argument("the model has no training counts (leaf_count, internal_count), which TreeSHAP "
                                "weighs its paths by");
  }
  std::call_once(built_, [this] { Build(); });
  const int num_features = forest_.num_features;
  const int64_t per_row = OutputsPerRow();
  std::fill(out, out + num_rows * per_row, 0.0);
  const auto per_iteration = static_cast<size_t>(forest_.trees_per_iteration);
  // Tree by tree over the rows, so that a tree's tables stay in cache for all of them; each row
  // still takes the trees in sequence.
  for (size_t t = first_tree; t < first_tree + num_trees; ++t) {
    const model::Tree& tree = forest_.trees[t];
    const size_t class_offset = (t % per_iteration) * static_cast<size_t>(num_features + 1);
    for (int r = 0; r < num_rows; ++r) {
      double* phi = out + r * per_row + class_offset;
      phi[num_features] += expected_value_[t];
      if (tree.num_leaves() > 1) AddTree(tree, tables_[t], values + static_cast<size_t>(r) * num_features, scratch, phi);
    }
  }
}

void TreeShap::AddTree(const model::Tree& tree, const TreeTables& tables, const double* values, Scratch* scratch,
                       double* phi) const {
  // The leaves in the row's hot-first order: a node's hot subtree before its cold one.
  auto& pending = scratch->pending;
  pending.assign(1, Scratch::Pending{0, 0, 0, false});
  while (!pending.empty()) {
    const Scratch::Pending at = pending.back();
    pending.pop_back();
    if (at.depth > 0) {
      if (scratch->hot.size() < static_cast<size_t>(at.depth)) scratch->hot.resize(static_cast<size_t>(at.depth));
      scratch->hot[static_cast<size_t>(at.depth - 1)] = at.hot ? 1 : 0;
    }
    if (at.index < 0) {
      const Leaf& leaf = tables.leaves[static_cast<size_t>(~at.index)];
      const double* addends;
      if (leaf.first_value != kReplay) {
        addends = tables.values.data() + leaf.first_value + at.pattern * static_cast<size_t>(leaf.elements);
      } else {
        scratch->addends.resize(static_cast<size_t>(leaf.depth));
        Replay(tree, tables, leaf, scratch->hot.data(), &scratch->path, scratch->addends.data(), nullptr);
        addends = scratch->addends.data();
      }
      const int32_t* features = tables.features.data() + leaf.first_feature;
      for (int32_t i = 0; i < leaf.elements; ++i) phi[features[i]] += addends[i];
      continue;
    }
    const model::Node& node = tree.nodes[static_cast<size_t>(at.index)];
    const bool left_hot = model::GoesLeft(tree, node, values[node.feature]);
    const uint64_t hot_bit = at.depth < 64 ? uint64_t{1} << at.depth : 0;
    pending.push_back({left_hot ? node.right : node.left, at.depth + 1, at.pattern, false});
    pending.push_back({left_hot ? node.left : node.right, at.depth + 1, at.pattern | hot_bit, true});
  }
}

}  // namespace engine
}  // namespace treescore
