#include "engine/tree_shap.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include "memory/account.h"
#include "model/decision.h"

namespace treescore {
namespace engine {
namespace {

// Rows a pass locates side by side before adding: their decisions take vector instructions and
// their table entries' loads overlap. With 16, the pass's entries and scratch outgrew the L1
// cache before the additions read them (7% slower on the bench's 300 x 31 leaves).
constexpr size_t kPassRows = 8;


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

TreeShap::TreeShap(const model::Forest& forest, size_t max_table_addends)
    : forest_(forest), max_table_addends_(std::min(max_table_addends, kMaxTableAddends)) {}

TreeShap::ScratchNeeds TreeShap::MostScratchNeeds() const {
  ScratchNeeds most;
  for (const model::Tree& tree : forest_.trees) {
    if (tree.num_leaves() <= 1) continue;
    // Each leaf's depth bounds its path elements, so their sum bounds the tree's elements
    // (TreeTables::features) and its replayed addends.
    int64_t depth_sum = 0, max_depth = 0;
    std::vector<std::pair<int32_t, int64_t>> below{{0, 0}};  // (node, its depth)
    while (!below.empty()) {
      const auto [node, depth] = below.back();
      below.pop_back();
      for (const int32_t child : {tree.nodes[static_cast<size_t>(node)].left, tree.nodes[static_cast<size_t>(node)].right}) {
        if (child >= 0) {
          below.push_back({child, depth + 1});
        } else {
          depth_sum += depth + 1;
          max_depth = std::max(max_depth, depth + 1);
        }
      }
    }
    const auto leaves = static_cast<int64_t>(tree.num_leaves());
    const auto nodes = static_cast<int64_t>(tree.nodes.size());
    const auto pass = static_cast<int64_t>(kPassRows);
    const int64_t levels = max_depth + 1;
    const int64_t bytes = (nodes + leaves) * pass * static_cast<int64_t>(sizeof(uint64_t) + sizeof(int32_t)) +  // pattern, position
                          nodes * pass * static_cast<int64_t>(sizeof(uint8_t)) +                                 // goes_left
                          leaves * pass * static_cast<int64_t>(sizeof(Scratch::Slot)) +                          // slots
                          depth_sum * static_cast<int64_t>(sizeof(size_t)) +                                     // offsets
                          (nodes + leaves) * static_cast<int64_t>(sizeof(uint32_t)) +                            // stamps
                          levels * (levels + 1) / 2 * static_cast<int64_t>(sizeof(ShapPathElement)) +            // path
                          (2 * levels) * static_cast<int64_t>(sizeof(Scratch::Descent)) +                        // descents
                          4 * levels * static_cast<int64_t>(sizeof(double));                                     // sums
    // Vectors that grow by resizing may hold up to twice what they were asked for.
    most.pass_bytes = std::max(most.pass_bytes, 2 * bytes);
    most.pass_addends = std::max(most.pass_addends, pass * depth_sum);
  }
  return most;
}

int64_t TreeShap::OutputsPerRow() const {
  return static_cast<int64_t>(forest_.num_classes) * (forest_.num_features + 1);
}

namespace {

// Extends `path` (elements 0..depth) by the edge from `node` to its left or right child, which
// the row takes where `hot`, as LightGBM's TreeSHAP recursion does; returns the new depth.
int Descend(const model::Tree& tree, const model::Node& node, bool left, bool hot, ShapPathElement* path, int depth) {
  // The child's share of the node's rows: hot or cold, LightGBM divides its count by the node's.
  const double w = node.cover;
  const double zero = Cover(tree, left ? node.left : node.right) / w;
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
  ExtendShapPath(path, depth, zero * incoming_zero, hot ? incoming_one : 0, node.feature);
  return depth;
}

// A leaf's addends from its whole path (elements 1..depth after the placeholder), in path order.
void LeafAddends(const ShapPathElement* path, int depth, double value, ShapSumsWork* work, double* addends) {
  UnwoundShapPathSums(path, depth, work, addends);
  for (int i = 1; i <= depth; ++i) addends[i - 1] = addends[i - 1] * (path[i].one_fraction - path[i].zero_fraction) * value;
}

}  // namespace

int TreeShap::Replay(const model::Tree& tree, const TreeTables& tables, const Leaf& leaf, const uint8_t* hot,
                     std::vector<ShapPathElement>* path_buffer, ShapSumsWork* work, double* addends,
                     int32_t* features) {
  path_buffer->resize(static_cast<size_t>(leaf.depth) + 1);
  ShapPathElement* path = path_buffer->data();
  // The root's call extends the empty path with a placeholder (feature -1), as LightGBM's does.
  int depth = 0;
  ExtendShapPath(path, 0, 1, 1, -1);
  for (int32_t j = 0; j < leaf.depth; ++j) {
    const Step& step = tables.steps[leaf.first_step + static_cast<size_t>(j)];
    depth = Descend(tree, tree.nodes[static_cast<size_t>(step.node)], step.left, hot[j] != 0, path, depth);
  }
  LeafAddends(path, depth, tree.leaf_value[static_cast<size_t>(&leaf - tables.leaves.data())], work, addends);
  if (features != nullptr) {
    for (int i = 1; i <= depth; ++i) features[i - 1] = path[i].feature;
  }
  return depth;
}

void TreeShap::ReplayRow(const model::Tree& tree, const TreeTables& tables, size_t r, Scratch* scratch,
                         Scratch::Slot* slots) {
  const size_t num_nodes = tree.nodes.size();
  // Leaf l's pattern and position for row r are at [l * kPassRows] of these.
  const uint64_t* leaf_pattern = scratch->pattern.data() + num_nodes * kPassRows + r;
  const int32_t* leaf_position = scratch->position.data() + num_nodes * kPassRows + r;
  AddendMemo& memo = scratch->memo;
  // The leaves the memo cannot give, and their ancestors, get this row's stamp: the replay goes
  // only there.
  if (scratch->node_stamp.size() < num_nodes) scratch->node_stamp.resize(num_nodes, 0);
  if (scratch->leaf_stamp.size() < tables.leaves.size()) scratch->leaf_stamp.resize(tables.leaves.size(), 0);
  if (++scratch->stamp == 0) {
    std::fill(scratch->node_stamp.begin(), scratch->node_stamp.end(), 0);
    std::fill(scratch->leaf_stamp.begin(), scratch->leaf_stamp.end(), 0);
    scratch->stamp = 1;
  }
  const uint32_t stamp = scratch->stamp;
  uint32_t* node_stamp = scratch->node_stamp.data();
  uint32_t* leaf_stamp = scratch->leaf_stamp.data();
  bool replays = false;
  for (const int32_t l : tables.replayed_leaves) {
    const Leaf& leaf = tables.leaves[static_cast<size_t>(l)];
    const size_t entry = static_cast<size_t>(l) * kPassRows;
    const double* kept = Memoized(leaf) ? memo.Find(l, leaf_pattern[entry]) : nullptr;
    if (kept != nullptr) {
      slots[leaf_position[entry]].addends = kept;
      continue;
    }
    replays = true;
    leaf_stamp[l] = stamp;
    for (size_t j = static_cast<size_t>(leaf.depth); j-- > 0;) {
      const auto node = static_cast<size_t>(tables.steps[leaf.first_step + j].node);
      if (node_stamp[node] == stamp) break;
      node_stamp[node] = stamp;
    }
  }
  if (!replays) return;
  auto stamped = [&](int32_t child) {
    return child < 0 ? leaf_stamp[static_cast<size_t>(~child)] == stamp : node_stamp[static_cast<size_t>(child)] == stamp;
  };
  // The path at depth d (at most d + 1 elements) is kept at paths[d * (d + 1) / 2]: a child
  // copies its parent's and extends it. LightGBM keeps the same triangle.
  const auto levels = static_cast<size_t>(tables.max_depth) + 1;
  scratch->path.resize(levels * (levels + 1) / 2);
  ShapPathElement* paths = scratch->path.data();
  auto level = [paths](int32_t depth) { return paths + static_cast<size_t>(depth) * static_cast<size_t>(depth + 1) / 2; };
  ExtendShapPath(paths, 0, 1, 1, -1);
  auto& descents = scratch->descents;
  descents.assign({{0, false, 0, 0}, {0, true, 0, 0}});
  while (!descents.empty()) {
    const Scratch::Descent at = descents.back();
    descents.pop_back();
    const model::Node& parent = tree.nodes[static_cast<size_t>(at.parent)];
    const int32_t child = at.left ? parent.left : parent.right;
    if (!stamped(child)) continue;
    const ShapPathElement* from = level(at.depth);
    ShapPathElement* path = level(at.depth + 1);
    std::copy(from, from + at.elements + 1, path);
    const bool hot = scratch->goes_left[static_cast<size_t>(at.parent) * kPassRows + r] == at.left;
    const int elements = Descend(tree, parent, at.left, hot, path, at.elements);
    if (child >= 0) {
      descents.push_back({child, false, at.depth + 1, elements});
      descents.push_back({child, true, at.depth + 1, elements});
      continue;
    }
    const auto l = static_cast<size_t>(~child);
    const Leaf& leaf = tables.leaves[l];
    double* addends = Memoized(leaf) ? memo.Insert(~child, leaf_pattern[l * kPassRows], elements) : memo.Keep(elements);
    LeafAddends(path, elements, tree.leaf_value[l], &scratch->sums, addends);
    slots[leaf_position[l * kPassRows]].addends = addends;
  }
}

bool TreeShap::Memoized(const Leaf& leaf) {
  // A pattern has a bit per edge.
  return leaf.depth <= 64;
}

void TreeShap::ListReplays(TreeTables* tables) {
  for (size_t l = 0; l < tables->leaves.size(); ++l) {
    if (tables->leaves[l].first_value != kReplay) continue;
    tables->replayed_leaves.push_back(static_cast<int32_t>(l));
    tables->replayed_addends += static_cast<size_t>(tables->leaves[l].elements);
  }
}

TreeShap::TreeTables TreeShap::Describe(const model::Tree& tree) {
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
      tables.max_depth = std::max(tables.max_depth, at.depth);
      leaf.first_step = tables.steps.size();
      tables.steps.insert(tables.steps.end(), path.begin(), path.end());
      continue;
    }
    const model::Node& node = tree.nodes[static_cast<size_t>(at.index)];
    auto entry = [&tree](int32_t child) { return child >= 0 ? child : static_cast<int32_t>(tree.nodes.size()) + ~child; };
    const bool numerical = node.decision.split == model::Split::kNumerical;
    tables.visits.push_back({at.index, at.depth, 0, 0, entry(node.left), entry(node.right), node.feature, numerical,
                             numerical ? model::InclusiveThreshold(node) : 0.0});
    pending.push_back({node.right, at.depth + 1, {at.index, false}});
    pending.push_back({node.left, at.depth + 1, {at.index, true}});
  }
  // Leaves under each child, children before parents.
  std::vector<int32_t> leaves_under(tree.nodes.size());
  for (auto visit = tables.visits.rbegin(); visit != tables.visits.rend(); ++visit) {
    const model::Node& node = tree.nodes[static_cast<size_t>(visit->node)];
    visit->left_leaves = node.left < 0 ? 1 : leaves_under[static_cast<size_t>(node.left)];
    visit->right_leaves = node.right < 0 ? 1 : leaves_under[static_cast<size_t>(node.right)];
    leaves_under[static_cast<size_t>(visit->node)] = visit->left_leaves + visit->right_leaves;
  }
  // Each leaf's features and element count (the same for every pattern); no tables yet.
  std::vector<ShapPathElement> buffer;
  ShapSumsWork work;
  std::vector<uint8_t> hot;
  std::vector<double> addends;
  for (Leaf& leaf : tables.leaves) {
    hot.assign(static_cast<size_t>(leaf.depth), 1);
    addends.resize(static_cast<size_t>(leaf.depth));
    std::vector<int32_t> features(static_cast<size_t>(leaf.depth));
    leaf.elements = Replay(tree, tables, leaf, hot.data(), &buffer, &work, addends.data(), features.data());
    leaf.first_feature = tables.features.size();
    tables.features.insert(tables.features.end(), features.begin(), features.begin() + leaf.elements);
  }
  return tables;
}

void TreeShap::Fill(const model::Tree& tree, TreeTables* tables, Leaf* leaf) {
  const size_t patterns = size_t{1} << leaf->depth;
  const auto elements = static_cast<size_t>(leaf->elements);
  leaf->first_value = tables->values.size();
  tables->values.resize(tables->values.size() + patterns * elements);
  std::vector<ShapPathElement> buffer;
  ShapSumsWork work;
  std::vector<uint8_t> hot(static_cast<size_t>(leaf->depth));
  for (size_t pattern = 0; pattern < patterns; ++pattern) {
    for (int32_t j = 0; j < leaf->depth; ++j) hot[static_cast<size_t>(j)] = (pattern >> j) & 1;
    Replay(tree, *tables, *leaf, hot.data(), &buffer, &work,
           tables->values.data() + leaf->first_value + pattern * elements, nullptr);
  }
}

void TreeShap::Build() const {
  // Tables go to the leaves whose tables are smallest, across the forest, while the budget
  // lasts: the many shallow leaves gain most per addend kept, and deep ones replay.
  struct Candidate {
    size_t size;  // addends
    size_t tree;
    size_t leaf;
  };
  std::vector<Candidate> candidates;
  tables_.reserve(forest_.trees.size());
  for (size_t t = 0; t < forest_.trees.size(); ++t) {
    const model::Tree& tree = forest_.trees[t];
    expected_value_.push_back(ExpectedValue(tree));
    tables_.push_back(tree.num_leaves() > 1 ? Describe(tree) : TreeTables());
    for (size_t l = 0; l < tables_[t].leaves.size(); ++l) {
      const Leaf& leaf = tables_[t].leaves[l];
      if (leaf.depth > kMaxTableDepth) continue;
      candidates.push_back({(size_t{1} << leaf.depth) * static_cast<size_t>(leaf.elements), t, l});
    }
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(a.size, a.tree, a.leaf) < std::tie(b.size, b.tree, b.leaf);
  });
  size_t budget = max_table_addends_;
  size_t chosen = 0;
  for (; chosen < candidates.size() && candidates[chosen].size <= budget; ++chosen) budget -= candidates[chosen].size;
  // Each tree's values are sized exactly before they are filled: growing them would hold up to
  // twice the tables, and the driver's estimate (TreeShapTables.tableBytes) counts them exactly.
  std::vector<size_t> tree_addends(forest_.trees.size(), 0);
  for (size_t c = 0; c < chosen; ++c) tree_addends[candidates[c].tree] += candidates[c].size;
  for (size_t t = 0; t < tables_.size(); ++t) tables_[t].values.reserve(tree_addends[t]);
  for (size_t c = 0; c < chosen; ++c) {
    const Candidate& candidate = candidates[c];
    Fill(forest_.trees[candidate.tree], &tables_[candidate.tree], &tables_[candidate.tree].leaves[candidate.leaf]);
  }
  for (TreeTables& tables : tables_) ListReplays(&tables);
}

void TreeShap::EnsureBuilt() const {
  if (!forest_.has_covers) {
    throw std::invalid_argument("the model has no training counts (leaf_count, internal_count), which TreeSHAP "
                                "weighs its paths by");
  }
  std::call_once(built_, [this] {
    memory::Charge charge(memory::Kind::kModels);  // the tables stay with the model
    Build();
    built_bytes_.store(charge.net_bytes(), std::memory_order_relaxed);
  });
}

TreeShap::TableStats TreeShap::Stats() const {
  EnsureBuilt();
  TableStats stats;
  for (size_t t = 0; t < forest_.trees.size(); ++t) {
    stats.leaves += forest_.trees[t].num_leaves();
    stats.replayed_leaves += static_cast<int64_t>(tables_[t].replayed_leaves.size());
    stats.table_addends += static_cast<int64_t>(tables_[t].values.size());
  }
  return stats;
}

void TreeShap::Explain(const double* values, int num_rows, size_t first_tree, size_t num_trees, Scratch* scratch,
                       double* out) const {
  EnsureBuilt();
  const int num_features = forest_.num_features;
  const int64_t per_row = OutputsPerRow();
  const auto stride = static_cast<size_t>(num_rows);
  // Contributions feature by feature (each feature's rows together) until the end, so that a
  // tree touches only its own features' rows, as it reads only their values.
  std::vector<double>& phi = scratch->phi;
  phi.assign(static_cast<size_t>(per_row) * stride, 0.0);
  const auto per_iteration = static_cast<size_t>(forest_.trees_per_iteration);
  // Tree by tree over the rows, so that a tree's tables stay in cache for all of them; each row
  // still takes the trees in sequence. A pass finds its rows' table entries (asking the memory
  // for each) before it adds any, so their loads overlap.
  for (size_t t = first_tree; t < first_tree + num_trees; ++t) {
    const model::Tree& tree = forest_.trees[t];
    const TreeTables& tables = tables_[t];
    const size_t class_offset = (t % per_iteration) * static_cast<size_t>(num_features + 1);
    double* expected = phi.data() + (class_offset + static_cast<size_t>(num_features)) * stride;
    for (size_t r = 0; r < stride; ++r) expected[r] += expected_value_[t];
    if (tree.num_leaves() == 1) continue;
    const auto num_leaves = static_cast<size_t>(tree.num_leaves());
    scratch->slots.resize(kPassRows * num_leaves);
    // Each element's contribution, as an offset into the block's feature-by-feature runs.
    scratch->offsets.resize(tables.features.size());
    for (size_t e = 0; e < tables.features.size(); ++e) scratch->offsets[e] = static_cast<size_t>(tables.features[e]) * stride;
    // Rows of the block share their replayed leaves' addends, within a bound.
    scratch->memo.Clear();
    for (size_t r0 = 0; r0 < stride; r0 += kPassRows) {
      const size_t n = std::min(kPassRows, stride - r0);
      if (!scratch->memo.Fits(n * tables.replayed_addends)) scratch->memo.Clear();
      scratch->memo.Reserve(n * tables.replayed_addends);
      Locate(tree, tables, values + r0, stride, n, scratch, scratch->slots.data());
      for (size_t r = 0; r < n; ++r) {
        double* row_phi = phi.data() + class_offset * stride + r0 + r;
        for (const Scratch::Slot* slot = scratch->slots.data() + r * num_leaves, *end = slot + num_leaves; slot != end; ++slot) {
          for (int32_t e = 0; e < slot->elements; ++e) row_phi[slot->offsets[e]] += slot->addends[e];
        }
      }
    }
  }
  for (size_t r = 0; r < stride; ++r) {
    for (int64_t c = 0; c < per_row; ++c) out[static_cast<int64_t>(r) * per_row + c] = phi[static_cast<size_t>(c) * stride + r];
  }
}

void TreeShap::Locate(const model::Tree& tree, const TreeTables& tables, const double* values, size_t stride,
                      size_t num_rows, Scratch* scratch, Scratch::Slot* slots) const {
  // Each node's decisions, and from them where each leaf falls in each row's hot-first order (a
  // node's hot subtree before its cold one) with its pattern: parents before children, the pass's
  // rows side by side, and without a branch on a row. Entry e of the scratch arrays holds the
  // pass's rows at [e * kPassRows, + num_rows).
  const size_t num_nodes = tree.nodes.size();
  const size_t num_entries = num_nodes + static_cast<size_t>(tree.num_leaves());
  if (scratch->pattern.size() < num_entries * kPassRows) {
    scratch->pattern.resize(num_entries * kPassRows);
    scratch->position.resize(num_entries * kPassRows);
  }
  if (scratch->goes_left.size() < num_nodes * kPassRows) scratch->goes_left.resize(num_nodes * kPassRows);
  uint64_t* pattern = scratch->pattern.data();
  int32_t* position = scratch->position.data();
  std::fill(pattern, pattern + num_rows, uint64_t{0});
  std::fill(position, position + num_rows, 0);
  for (const Visit& visit : tables.visits) {
    const double* column = values + static_cast<size_t>(visit.feature) * stride;
    uint8_t* left = scratch->goes_left.data() + static_cast<size_t>(visit.node) * kPassRows;
    // An ordinary value's decision is a comparison; the node's whole rule is for the others.
    bool ordinary = visit.numerical;
    for (size_t r = 0; r < num_rows; ++r) {
      left[r] = column[r] <= visit.threshold;
      ordinary &= model::IsOrdinary(column[r]);
    }
    if (!ordinary) {
      const model::Node& node = tree.nodes[static_cast<size_t>(visit.node)];
      for (size_t r = 0; r < num_rows; ++r) left[r] = model::GoesLeft(tree, node, column[r]);
    }
    // Bit `depth` is the edge below this node; leaves past 64 edges replay and ignore it.
    const uint64_t bit = uint64_t{1} << (visit.depth & 63);
    const uint64_t* above = pattern + static_cast<size_t>(visit.node) * kPassRows;
    const int32_t* start = position + static_cast<size_t>(visit.node) * kPassRows;
    uint64_t* left_pattern = pattern + static_cast<size_t>(visit.left_entry) * kPassRows;
    uint64_t* right_pattern = pattern + static_cast<size_t>(visit.right_entry) * kPassRows;
    int32_t* left_position = position + static_cast<size_t>(visit.left_entry) * kPassRows;
    int32_t* right_position = position + static_cast<size_t>(visit.right_entry) * kPassRows;
    for (size_t r = 0; r < num_rows; ++r) {
      const uint64_t hot_left = -static_cast<uint64_t>(left[r]);
      left_pattern[r] = above[r] | (bit & hot_left);
      right_pattern[r] = above[r] | (bit & ~hot_left);
      left_position[r] = start[r] + (visit.right_leaves & ~static_cast<int32_t>(hot_left));
      right_position[r] = start[r] + (visit.left_leaves & static_cast<int32_t>(hot_left));
    }
  }
  const auto num_leaves = static_cast<size_t>(tree.num_leaves());
  for (size_t l = 0; l < num_leaves; ++l) {
    const Leaf& leaf = tables.leaves[l];
    const uint64_t* leaf_pattern = pattern + (num_nodes + l) * kPassRows;
    const int32_t* leaf_position = position + (num_nodes + l) * kPassRows;
    const size_t* offsets = scratch->offsets.data() + leaf.first_feature;
    // Leaves that replay get their addends below.
    const double* table = leaf.first_value == kReplay ? nullptr : tables.values.data() + leaf.first_value;
    for (size_t r = 0; r < num_rows; ++r) {
      const double* addends = table == nullptr ? nullptr : table + leaf_pattern[r] * static_cast<size_t>(leaf.elements);
      __builtin_prefetch(addends);
      slots[r * num_leaves + static_cast<size_t>(leaf_position[r])] = {addends, offsets, leaf.elements};
    }
  }
  if (tables.replayed_leaves.empty()) return;
  for (size_t r = 0; r < num_rows; ++r) ReplayRow(tree, tables, r, scratch, slots + r * num_leaves);
}

}  // namespace engine
}  // namespace treescore
