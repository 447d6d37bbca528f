// Ensemble programs: a tree of models and combinators (weighted ensembles, per-key routing,
// cascades) evaluated over a whole batch in native code, so custom ensemble logic costs no
// JVM or Python round trip per row. Each model still gets one engine call per batch: rows
// are grouped by route and compacted for a cascade's second stage before they are scored.
// Inside a what-if grid, a model scores whole grids with Predictor::PredictGrid, which shares
// the work on inputs that do not vary; a cascade's escalated points are scored one by one.
#pragma once

#include <cstdint>
#include <memory>
#include <variant>
#include <vector>

#include "program/combine.h"
#include "predictor.h"

namespace treescore {

// A model reading `columns` of the input matrix (one per model feature, in the model's order).
struct ModelNode {
  std::shared_ptr<const Predictor> model;
  PredictKind kind = PredictKind::kPrediction;  // prediction or raw; one output per row
  std::vector<int32_t> columns;
};

// Each member's output times its weight, then combined: sum; mean = sum / sum of weights;
// min, max, median of the weighted outputs (median of an even count: mean of the middle two).
struct EnsembleNode {
  std::vector<int> members;
  std::vector<double> weights;
  Combine combine = Combine::kMean;
  std::vector<Transform> transforms;
};

// A route index that picks no route: the row scores NaN (the JVM turns that into null).
constexpr int32_t kNoRoute = -1;

// Rows go to routes[route index]; the index comes from the caller (the JVM maps keys to
// indices, and unknown keys to kNoRoute).
struct RouteNode {
  int slot = 0;  // which route-index column
  std::vector<int> routes;

  // The route row `row` takes: its index in this node's slot of route_index (rows x num_slots
  // int32 values), 0 .. routes.size() - 1 or kNoRoute. Throws std::invalid_argument for any
  // other index. Scoring, contributions and top-K selection all pick through this.
  int32_t Pick(const int32_t* route_index, int num_slots, int64_t row) const;
};

// Rows whose first-stage output is below accept_below or above accept_above keep it; the
// rest are scored again by `full`, compacted into one batch.
struct CascadeNode {
  int first = 0;
  int full = 0;
  double accept_below = 0;
  double accept_above = 0;
};

using ProgramNode = std::variant<ModelNode, EnsembleNode, RouteNode, CascadeNode>;

class Program {
 public:
  // Nodes in post-order: every node refers only to earlier ones; the last is the root.
  Program(std::vector<ProgramNode> nodes, int num_inputs, int num_route_slots);

  struct Stats {
    int64_t escalated = 0;  // rows a cascade passed to its second stage
  };

  // Scores `rows` rows into out[rows]. Every run of grid.points consecutive rows is one base
  // row's what-if grid (one point per row without a grid): `input` holds at least the rows /
  // grid.points base rows, one column per input (any FeatureBatch layout; a model reads its
  // columns in place), and grid.varying lists the inputs whose value
  // each point reads from grid.values instead (GridPoints, rows/feature_batch.h, with inputs for
  // features). route_index holds rows x num_route_slots int32 values (may be null when there
  // are no routes). monotone (+1 increasing, -1 decreasing, 0 none) applies a running max or
  // min along each run of `run` consecutive points, which divides grid.points.
  Stats Evaluate(const FeatureBatch& input, int64_t rows, const int32_t* route_index, int num_threads,
                 const GridPoints& grid, int monotone, int run, double* out) const;

  // SHAP contributions of the same rows, in the raw (link) space: out holds rows x
  // (num_inputs + 1) doubles, one per program input in input order and the expected value
  // last. Shapley values are linear, so they are exact for the linear parts: a model gives
  // LightGBM's TreeSHAP values mapped onto the inputs it reads (features reading one input
  // add up, in feature order); a weighted sum gives w1*c1 + w2*c2 + ... in member order and a
  // mean that sum / (w1 + w2 + ...); a route its chosen scorer's; a cascade those of the stage
  // that answered, the first stage's output deciding as when scoring. An ensemble's transforms
  // are left out (the values explain its combined score in link space); a min, max or median
  // ensemble throws. A route scoring null gives NaN throughout. There is no monotone forcing:
  // a running max or min is not linear.
  Stats EvaluateContributions(const FeatureBatch& input, int64_t rows, const int32_t* route_index, int num_threads,
                              const GridPoints& grid, double* out) const;

  int num_inputs() const { return num_inputs_; }
  // The nodes in post-order, the root last: what top-K selection reads an ensemble's parts from.
  const std::vector<ProgramNode>& nodes() const { return nodes_; }
  // Doubles EvaluateContributions writes per row.
  int64_t contributions_per_row() const { return static_cast<int64_t>(num_inputs_) + 1; }
  int num_route_slots() const { return num_route_slots_; }

 private:
  struct Batch;
  void EvalNode(int node, const Batch& batch, const std::vector<int64_t>& rows, double* out, Stats* stats) const;
  void EvalModel(const ModelNode& node, const Batch& batch, const std::vector<int64_t>& rows, double* out) const;
  void EvalContributions(int node, const Batch& batch, const std::vector<int64_t>& rows, double* out,
                         Stats* stats) const;
  void EvalModelContributions(const ModelNode& node, const Batch& batch, const std::vector<int64_t>& rows,
                              double* out) const;
  void CheckArguments(const FeatureBatch& input, int64_t rows, const int32_t* route_index,
                      const GridPoints& grid) const;

  std::vector<ProgramNode> nodes_;
  int num_inputs_;
  int num_route_slots_;
};

}  // namespace treescore
