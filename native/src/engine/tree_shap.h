// TreeSHAP contributions (Lundberg et al., arXiv:1706.06060) with LightGBM's bits, at a fraction
// of its cost.
//
// LightGBM (Tree::TreeSHAP, GBDT::PredictContrib) visits every node for every row, the hot child
// (the row's own decision) before the cold one, and at each leaf adds w * (one - zero) * value to
// each feature on the leaf's path. A row enters only through its node decisions: an element's
// one_fraction is 1 or 0 as the row's decisions agree with the path, and everything else (the
// path's features, zero fractions and unwinds) is fixed by the tree. So a leaf's addends depend on
// the row only through which of its ancestors' edges are hot. They are computed here once per such
// pattern, by LightGBM's path arithmetic in its order (shap_path.h), and kept in a table per leaf;
// a row then costs its node decisions, a lookup per leaf and the additions into its contributions,
// made in LightGBM's order (trees in sequence, leaves in the row's hot-first order, elements in path
// order), so every sum is LightGBM's. A leaf too deep for a table (2^depth patterns) replays its
// path with the same arithmetic instead, once per pattern its block of rows has (AddendMemo).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "engine/addend_memo.h"
#include "engine/shap_path.h"
#include "model/forest.h"
#include "wire_limits.h"

namespace treescore {
namespace engine {

class TreeShap {
 public:
  // A leaf gets a table of 2^depth patterns up to this depth; deeper leaves replay their path.
  static constexpr int kMaxTableDepth = static_cast<int>(wire::kTreeShapMaxTableDepth);
  // Addends kept over all of a forest's tables (8 bytes each), at most: beyond them, leaves replay.
  static constexpr size_t kMaxTableAddends = static_cast<size_t>(wire::kTreeShapMaxTableAddends);

  // The forest must outlive this. The tables are built on the first Explain (or Stats), for
  // every tree, so that a model only scored never pays for them. They keep at most
  // max_table_addends addends (at most kMaxTableAddends), so that they fit the memory the model
  // may hold; the leaves left without one replay, with the same bits.
  explicit TreeShap(const model::Forest& forest, size_t max_table_addends = kMaxTableAddends);

  // Doubles per row: num_features + 1 per class, the expected value last in each class's run.
  int64_t OutputsPerRow() const;

  // What the tables hold, building them if no Explain has (throwing as Explain does). The JVM
  // estimates the same on the driver (treescore.model.TreeShapTables) to choose an engine and to
  // budget memory.
  struct TableStats {
    int64_t leaves = 0;           // over all trees
    int64_t replayed_leaves = 0;  // leaves without a table
    int64_t table_addends = 0;    // 8 bytes each
  };
  TableStats Stats() const;
  // Bytes the tables hold: 0 until built.
  int64_t built_bytes() const { return built_bytes_.load(std::memory_order_relaxed); }

  // What explaining a block holds beside its rows' values and contributions, for the forest's
  // largest tree: Scratch's per-pass arrays (a pass's decisions, patterns, positions and slots;
  // a replaying row's paths), and the addends one pass's replayed leaves need at once, which the
  // memo holds even where they outgrow its room. From the trees alone, without the tables, so
  // that a model is charged for them before its first contributions.
  struct ScratchNeeds {
    int64_t pass_bytes = 0;
    int64_t pass_addends = 0;
  };
  ScratchNeeds MostScratchNeeds() const;

  // What one caller reuses from row to row.
  struct Scratch {
    // For each of a pass's rows, per node of the current tree and then per leaf: its edges' hot
    // pattern (bit j: edge j from the root is hot) and where its leaves start in the row's
    // hot-first order; and per node, the row's decision.
    std::vector<uint64_t> pattern;
    std::vector<int32_t> position;
    std::vector<uint8_t> goes_left;
    // A pass's rows' leaves, each row's in its hot-first order, each with its addends (in the
    // tables, or in `replayed` for leaves without one).
    struct Slot {
      const double* addends;
      const size_t* offsets;  // where each addend goes in the block's contributions
      int32_t elements;
    };
    std::vector<Slot> slots;
    std::vector<size_t> offsets;  // the current tree's elements' (TreeTables::features)
    // The addends of replayed leaves, for the block's rows of the current tree, within its room:
    // a pass that would outgrow it starts it again. The bench's 100 x 255-leaf model would keep
    // about 0.7 million per tree for 2,000 rows.
    AddendMemo memo;
    // Where a row's replay goes: nodes and leaves with its stamp (one per replaying row).
    std::vector<uint32_t> node_stamp;
    std::vector<uint32_t> leaf_stamp;
    uint32_t stamp = 0;
    std::vector<ShapPathElement> path;  // a replaying row's paths, one per depth
    ShapSumsWork sums;
    struct Descent {
      int32_t parent;    // the node whose child is next
      bool left;         // that child
      int32_t depth;     // the parent's, in edges
      int32_t elements;  // the parent's path elements after the root's placeholder
    };
    std::vector<Descent> descents;
    std::vector<double> phi;  // a batch's contributions, feature by feature
  };
  // The contributions of num_rows rows over trees [first_tree, first_tree + num_trees) (whole
  // iterations) into out[num_rows x OutputsPerRow()]. `values` holds the rows feature by feature
  // (feature f of row r at f * num_rows + r), as the forest reads them (model::ReadInput). Throws
  // std::invalid_argument for a forest without covers.
  void Explain(const double* values, int num_rows, size_t first_tree, size_t num_trees, Scratch* scratch,
               double* out) const;

 private:
  // An ancestor of a leaf, and whether the path goes to its left child.
  struct Step {
    int32_t node;
    bool left;
  };
  struct Leaf {
    int32_t depth = 0;             // edges from the root
    int32_t elements = 0;          // path elements after the root's placeholder: addends per pattern
    size_t first_step = 0;         // its ancestors in TreeTables::steps, root first
    size_t first_feature = 0;      // its elements' features in TreeTables::features, in path order
    size_t first_value = kReplay;  // its table in TreeTables::values: `elements` addends per pattern
  };
  static constexpr size_t kReplay = ~size_t{0};
  // A node in an order that puts every node after its parent, with what placing its children
  // in a row's hot-first leaf order needs.
  struct Visit {
    int32_t node;
    int32_t depth;         // edges from the root
    int32_t left_leaves;   // leaves under its left child
    int32_t right_leaves;  // and under its right
    // Where its children's pattern and position go in Scratch: a node's own index, and leaf l's
    // the node count + l. One store for either kind spares a branch per child.
    int32_t left_entry;
    int32_t right_entry;
    // Its decision for an ordinary value (model::IsOrdinary) at a numerical node, read here
    // rather than from the node: value <= threshold (model::InclusiveThreshold).
    int32_t feature;
    bool numerical;
    double threshold;
  };
  struct TreeTables {
    std::vector<Visit> visits;
    std::vector<Leaf> leaves;
    std::vector<Step> steps;
    std::vector<int32_t> features;
    std::vector<double> values;
    int32_t max_depth = 0;  // of its leaves
    // The leaves without a table, and their elements in all.
    std::vector<int32_t> replayed_leaves;
    size_t replayed_addends = 0;
  };

  // Builds the tables once; throws std::invalid_argument for a forest without covers.
  void EnsureBuilt() const;
  void Build() const;
  // The leaves of num_rows (at most a pass's) rows in a tree of more than one leaf, each row's in
  // its hot-first order: row r's into slots[r * num_leaves, + num_leaves). Feature f of row r is
  // values[f * stride + r]. Replayed leaves' addends are in Scratch::memo.
  void Locate(const model::Tree& tree, const TreeTables& tables, const double* values, size_t stride, size_t num_rows,
              Scratch* scratch, Scratch::Slot* slots) const;
  // Tree `tree`'s leaves, their paths and elements, without tables.
  static TreeTables Describe(const model::Tree& tree);
  // Builds `leaf`'s table, 2^depth patterns of its addends.
  static void Fill(const model::Tree& tree, TreeTables* tables, Leaf* leaf);
  // Lists the leaves left without a table once the tables are filled.
  static void ListReplays(TreeTables* tables);
  // Leaf `leaf`'s addends for a row whose edges along the path are hot where hot[j] != 0, into
  // addends[0, elements), and its elements' features into features (if not null); returns
  // the element count.
  static int Replay(const model::Tree& tree, const TreeTables& tables, const Leaf& leaf, const uint8_t* hot,
                     std::vector<ShapPathElement>* path, ShapSumsWork* work, double* addends, int32_t* features);
  // Row r of a pass (its decisions in Scratch::goes_left, its slots located) gets the addends of
  // its leaves without a table: from the memo where an earlier row had the same pattern, else by
  // a walk to the others that extends every path once per node, not once per leaf under it, as
  // LightGBM's own recursion does, into the memo.
  static void ReplayRow(const model::Tree& tree, const TreeTables& tables, size_t r, Scratch* scratch,
                        Scratch::Slot* slots);
  // Whether a leaf's addends can be kept by pattern.
  static bool Memoized(const Leaf& leaf);

  const model::Forest& forest_;
  const size_t max_table_addends_;
  mutable std::once_flag built_;
  mutable std::vector<double> expected_value_;  // per tree
  mutable std::vector<TreeTables> tables_;      // per tree
  mutable std::atomic<int64_t> built_bytes_{0};
};

}  // namespace engine
}  // namespace treescore
