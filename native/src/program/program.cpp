#include "program/program.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

namespace treescore {

struct Program::Batch {
  const FeatureBatch* input;  // base rows, one column per input
  const int32_t* route_index;
  int num_threads;
  const GridPoints* grid;
};

Program::Program(std::vector<ProgramNode> nodes, int num_inputs, int num_route_slots)
    : nodes_(std::move(nodes)), num_inputs_(num_inputs), num_route_slots_(num_route_slots) {
  if (nodes_.empty()) throw std::invalid_argument("a program needs at least one node");
}

int32_t RouteNode::Pick(const int32_t* route_index, int num_slots, int64_t row) const {
  const int32_t r = route_index[row * num_slots + slot];
  if (r < kNoRoute || r >= static_cast<int32_t>(routes.size())) {
    throw std::invalid_argument("route index " + std::to_string(r) + " outside -1.." +
                                std::to_string(static_cast<int64_t>(routes.size()) - 1));
  }
  return r;
}

namespace {

// Whether `rows` are whole grids: runs of `points` rows, each run one base row's points in order.
bool WholeGrids(const std::vector<int64_t>& rows, int points) {
  if (rows.size() % static_cast<size_t>(points) != 0) return false;
  for (size_t start = 0; start < rows.size(); start += static_cast<size_t>(points)) {
    if (rows[start] % points != 0) return false;
    for (int k = 1; k < points; ++k) {
      if (rows[start + static_cast<size_t>(k)] != rows[start] + k) return false;
    }
  }
  return true;
}

// Whether `rows` run on without a gap (first, first + 1, ...), so that a view of the batch serves them.
bool Consecutive(const std::vector<int64_t>& rows) {
  for (size_t i = 1; i < rows.size(); ++i) {
    if (rows[i] != rows[0] + static_cast<int64_t>(i)) return false;
  }
  return true;
}

// The most rows (grid points) a model is called for at once where its rows are copied: what
// RowsPerCopy allows for `doubles_per_row`, in whole grids of `points` (1 where a part need not
// keep grids whole). So a model's copies and outputs grow with its width, not with the batch
// (docs/tuning.md, "Sizing native memory").
size_t PartRows(int64_t doubles_per_row, int points) {
  const int32_t width = static_cast<int32_t>(std::min<int64_t>(doubles_per_row, std::numeric_limits<int32_t>::max()));
  return static_cast<size_t>(std::max(1, RowsPerCopy(width) / points)) * static_cast<size_t>(points);
}

// Calls score(part, offset) for `rows` a part of at most `part_rows` at a time; offset is the
// part's first position among `rows`.
template <typename Score>
void InParts(const std::vector<int64_t>& rows, size_t part_rows, Score score) {
  for (size_t first = 0; first < rows.size(); first += part_rows) {
    const std::vector<int64_t> part(rows.begin() + static_cast<std::ptrdiff_t>(first),
                                    rows.begin() + static_cast<std::ptrdiff_t>(std::min(rows.size(), first + part_rows)));
    score(part, first);
  }
}

}  // namespace

namespace {

// A route node's rows grouped by route index, so that each route's scorer is called once for
// all of its rows: each route's rows and their positions among `rows`, and the positions of
// the rows with index -1, which score null.
struct RouteGroups {
  RouteGroups(const RouteNode& route, const int32_t* route_index, int num_slots, const std::vector<int64_t>& all)
      : rows(route.routes.size()), positions(route.routes.size()) {
    for (size_t i = 0; i < all.size(); ++i) {
      const int32_t r = route.Pick(route_index, num_slots, all[i]);
      if (r == kNoRoute) {
        unrouted.push_back(i);
      } else {
        rows[r].push_back(all[i]);
        positions[r].push_back(i);
      }
    }
  }
  std::vector<std::vector<int64_t>> rows;
  std::vector<std::vector<size_t>> positions;
  std::vector<size_t> unrouted;
};

// A cascade node's rows split by its first stage's outputs: rows[0] (and their positions among
// `all`) keep the first stage's answer, being below accept_below or above accept_above;
// rows[1] go to the full stage. Scores and contributions decide by this one rule.
struct CascadeSplit {
  CascadeSplit(const CascadeNode& cascade, const double* first_outputs, const std::vector<int64_t>& all) {
    for (size_t i = 0; i < all.size(); ++i) {
      const bool confident = first_outputs[i] < cascade.accept_below || first_outputs[i] > cascade.accept_above;
      rows[confident ? 0 : 1].push_back(all[i]);
      positions[confident ? 0 : 1].push_back(i);
    }
  }
  std::vector<int64_t> rows[2];
  std::vector<size_t> positions[2];
};

// 0, 1, ..., count - 1: every row of a batch.
std::vector<int64_t> AllRows(int64_t count) {
  std::vector<int64_t> all(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) all[i] = i;
  return all;
}

}  // namespace

namespace {

// A model's base rows, named by their first grid point (the row itself without a grid): a view
// of the program's batch where they are consecutive rows of it, as when a whole batch is
// scored, otherwise (a route's group, a cascade's escalated rows) gathered into a matrix.
class ModelRows {
 public:
  ModelRows(const FeatureBatch& view, const std::vector<int64_t>& first_points, int points) {
    const auto count = static_cast<int32_t>(first_points.size());
    const int64_t first = count > 0 ? first_points[0] : 0;
    bool in_order = first % points == 0;
    for (int32_t b = 0; b < count && in_order; ++b) in_order = first_points[b] == first + static_cast<int64_t>(b) * points;
    if (in_order) {
      batch_ = view.Rows(first / points, count);
      return;
    }
    gathered_.resize(static_cast<size_t>(count) * view.num_cols);
    for (int32_t b = 0; b < count; ++b) {
      for (int32_t j = 0; j < view.num_cols; ++j) {
        gathered_[static_cast<size_t>(b) * view.num_cols + j] = view.At(first_points[b] / points, j);
      }
    }
    matrix_.emplace(gathered_.data(), count, view.num_cols);
    batch_ = matrix_->batch();
  }
  const FeatureBatch& batch() const { return batch_; }

 private:
  std::vector<double> gathered_;
  std::optional<RowMajor> matrix_;
  FeatureBatch batch_;
};

}  // namespace

namespace {

// A model node's view of the program's batch: its columns in its feature order (no copy), and
// which of its features read a varying grid input, with that input's place among the varying.
class ModelView {
 public:
  ModelView(const ModelNode& node, const FeatureBatch& input, const GridPoints& grid)
      : batch_(input.Columns(node.columns, &columns_)) {
    for (int32_t j = 0; j < batch_.num_cols; ++j) {
      const auto found = std::find(grid.varying.begin(), grid.varying.end(), node.columns[j]);
      if (found == grid.varying.end()) continue;
      varying_.push_back(j);
      value_index_.push_back(static_cast<size_t>(found - grid.varying.begin()));
    }
  }
  ModelView(const ModelView&) = delete;
  ModelView& operator=(const ModelView&) = delete;

  const FeatureBatch& batch() const { return batch_; }
  const std::vector<int32_t>& varying() const { return varying_; }

  // Point k of every whole grid in `rows` (runs of grid.points), the model's varying values only.
  std::vector<double> VaryingValues(const std::vector<int64_t>& rows, const GridPoints& grid) const {
    const size_t model_varying = varying_.size();
    std::vector<double> values(rows.size() * model_varying);
    for (size_t i = 0; i < rows.size(); ++i) {
      const double* point = grid.values + static_cast<size_t>(rows[i]) * grid.varying.size();
      for (size_t v = 0; v < model_varying; ++v) values[i * model_varying + v] = point[value_index_[v]];
    }
    return values;
  }

  // Each point's row, one by one (row-major): its base row with the point's varying values in place.
  std::vector<double> PointRows(const std::vector<int64_t>& rows, const GridPoints& grid) const {
    const size_t num_cols = columns_.size();
    std::vector<double> matrix(rows.size() * num_cols);
    for (size_t i = 0; i < rows.size(); ++i) {
      double* target = matrix.data() + i * num_cols;
      for (size_t j = 0; j < num_cols; ++j) target[j] = batch_.At(rows[i] / grid.points, static_cast<int32_t>(j));
      if (varying_.empty()) continue;
      const double* point = grid.values + static_cast<size_t>(rows[i]) * grid.varying.size();
      for (size_t v = 0; v < varying_.size(); ++v) target[varying_[v]] = point[value_index_[v]];
    }
    return matrix;
  }

 private:
  std::vector<const double*> columns_;
  std::vector<int32_t> varying_;
  std::vector<size_t> value_index_;
  FeatureBatch batch_;
};

}  // namespace

void Program::EvalModel(const ModelNode& node, const Batch& batch, const std::vector<int64_t>& rows, double* out) const {
  const auto num_rows = static_cast<int32_t>(rows.size());
  if (num_rows == 0) return;
  const GridPoints& grid = *batch.grid;
  const int points = grid.points;
  // Whole grids share their base rows, so their parts keep them whole and copy base rows only;
  // other points (a cascade's escalated ones) are copied as rows, a copy's worth at a time.
  // Consecutive whole grids are read in place, and only the model's varying values are copied.
  const bool whole_grids = WholeGrids(rows, points);
  const ModelView view(node, *batch.input, grid);
  const int64_t copied_per_row = static_cast<int64_t>(
      whole_grids && Consecutive(rows) ? view.varying().size() : node.columns.size());
  const size_t part_rows = PartRows(copied_per_row, whole_grids ? points : 1);
  if (copied_per_row > 0 && rows.size() > part_rows) {  // rows to copy: in parts
    InParts(rows, part_rows, [&](const std::vector<int64_t>& part, size_t at) { EvalModel(node, batch, part, out + at); });
    return;
  }
  if (points == 1 && view.varying().empty()) {
    node.model->Predict(ModelRows(view.batch(), rows, 1).batch(), node.kind, IterationRange{}, batch.num_threads, out,
                        num_rows);
    return;
  }
  if (whole_grids) {
    // Base rows once, and per point only the varying values: the engine shares the rest.
    const int32_t num_base = num_rows / points;
    std::vector<int64_t> first_points(static_cast<size_t>(num_base));
    for (int32_t b = 0; b < num_base; ++b) first_points[b] = rows[static_cast<size_t>(b) * points];
    const std::vector<double> values = view.VaryingValues(rows, grid);
    GridPoints model_grid;
    model_grid.points = points;
    model_grid.varying = view.varying();
    model_grid.values = values.data();
    node.model->PredictGrid(ModelRows(view.batch(), first_points, points).batch(), model_grid, node.kind,
                            IterationRange{}, batch.num_threads, out, num_rows);
    return;
  }
  // A cascade's escalated points within a grid, one by one.
  const std::vector<double> matrix = view.PointRows(rows, grid);
  node.model->Predict(matrix.data(), num_rows, view.batch().num_cols, node.kind, IterationRange{}, batch.num_threads,
                      out, num_rows);
}

void Program::EvalModelContributions(const ModelNode& node, const Batch& batch, const std::vector<int64_t>& rows,
                                     double* out) const {
  const auto num_rows = static_cast<int32_t>(rows.size());
  if (num_rows == 0) return;
  const GridPoints& grid = *batch.grid;
  const int64_t per_row = node.model->OutputsPerRow(PredictKind::kContrib, {});
  // TreeSHAP shares nothing between a grid's points, so parts need not keep grids whole.
  const size_t part_rows = PartRows(per_row, 1);
  if (rows.size() > part_rows) {  // the model's own contributions, and any copies, a part at a time
    const auto width = static_cast<size_t>(contributions_per_row());
    InParts(rows, part_rows, [&](const std::vector<int64_t>& part, size_t at) {
      EvalModelContributions(node, batch, part, out + at * width);
    });
    return;
  }
  const ModelView view(node, *batch.input, grid);
  const int32_t num_cols = view.batch().num_cols;
  std::vector<double> shap(static_cast<size_t>(num_rows) * static_cast<size_t>(per_row));
  // TreeSHAP shares nothing between grid points, so every point is a row of its own.
  if (grid.points == 1 && view.varying().empty()) {
    node.model->Predict(ModelRows(view.batch(), rows, 1).batch(), PredictKind::kContrib, IterationRange{},
                        batch.num_threads, shap.data(), static_cast<int64_t>(shap.size()));
  } else {
    const std::vector<double> matrix = view.PointRows(rows, grid);
    node.model->Predict(matrix.data(), num_rows, num_cols, PredictKind::kContrib, IterationRange{}, batch.num_threads,
                        shap.data(), static_cast<int64_t>(shap.size()));
  }
  // Onto the program's inputs: the first feature reading an input sets it, later ones add to it
  // in feature order; inputs the model does not read are 0.
  std::vector<bool> first_use(static_cast<size_t>(num_cols));
  std::vector<bool> used(static_cast<size_t>(num_inputs_));
  for (int32_t j = 0; j < num_cols; ++j) {
    first_use[j] = !used[node.columns[j]];
    used[node.columns[j]] = true;
  }
  const int64_t width = contributions_per_row();
  for (int32_t i = 0; i < num_rows; ++i) {
    const double* from = shap.data() + static_cast<size_t>(i) * per_row;
    double* to = out + static_cast<size_t>(i) * width;
    std::fill(to, to + width, 0.0);
    for (int32_t j = 0; j < num_cols; ++j) {
      double& target = to[node.columns[j]];
      target = first_use[j] ? from[j] : target + from[j];
    }
    to[num_inputs_] = from[num_cols];
  }
}

void Program::EvalNode(int index, const Batch& batch, const std::vector<int64_t>& rows, double* out, Stats* stats) const {
  const ProgramNode& node = nodes_[index];
  if (const auto* model = std::get_if<ModelNode>(&node)) {
    EvalModel(*model, batch, rows, out);
  } else if (const auto* ensemble = std::get_if<EnsembleNode>(&node)) {
    const size_t members = ensemble->members.size();
    std::vector<std::vector<double>> outputs(members, std::vector<double>(rows.size()));
    for (size_t m = 0; m < members; ++m) EvalNode(ensemble->members[m], batch, rows, outputs[m].data(), stats);
    const double weight_sum = WeightSum(ensemble->weights);
    std::vector<double> weighted(members), scratch;
    for (size_t i = 0; i < rows.size(); ++i) {
      for (size_t m = 0; m < members; ++m) weighted[m] = ensemble->weights[m] * outputs[m][i];
      out[i] = ApplyTransforms(CombineRow(ensemble->combine, weighted, weight_sum, &scratch), ensemble->transforms);
    }
  } else if (const auto* route = std::get_if<RouteNode>(&node)) {
    const RouteGroups groups(*route, batch.route_index, num_route_slots_, rows);
    for (size_t i : groups.unrouted) out[i] = std::numeric_limits<double>::quiet_NaN();
    std::vector<double> scored;
    for (size_t r = 0; r < groups.rows.size(); ++r) {
      if (groups.rows[r].empty()) continue;
      scored.assign(groups.rows[r].size(), 0);
      EvalNode(route->routes[r], batch, groups.rows[r], scored.data(), stats);
      for (size_t k = 0; k < groups.rows[r].size(); ++k) out[groups.positions[r][k]] = scored[k];
    }
  } else {
    const auto& cascade = std::get<CascadeNode>(node);
    EvalNode(cascade.first, batch, rows, out, stats);
    const CascadeSplit split(cascade, out, rows);
    const std::vector<int64_t>& escalated = split.rows[1];
    if (escalated.empty()) return;
    std::vector<double> scored(escalated.size());
    EvalNode(cascade.full, batch, escalated, scored.data(), stats);
    for (size_t k = 0; k < escalated.size(); ++k) out[split.positions[1][k]] = scored[k];
    stats->escalated += static_cast<int64_t>(escalated.size());
  }
}

namespace {

bool Linear(Combine combine) { return combine == Combine::kSum || combine == Combine::kMean; }

}  // namespace

void Program::EvalContributions(int index, const Batch& batch, const std::vector<int64_t>& rows, double* out,
                                Stats* stats) const {
  const ProgramNode& node = nodes_[index];
  const size_t width = static_cast<size_t>(contributions_per_row());
  // The contributions of node `child` for `part` of the rows, written where `at` places them.
  std::vector<double> scored;
  const auto contributions_into = [&](int child, const std::vector<int64_t>& part, const std::vector<size_t>& at) {
    if (part.empty()) return;
    scored.assign(part.size() * width, 0);
    EvalContributions(child, batch, part, scored.data(), stats);
    for (size_t k = 0; k < part.size(); ++k) std::copy_n(scored.data() + k * width, width, out + at[k] * width);
  };
  if (const auto* model = std::get_if<ModelNode>(&node)) {
    EvalModelContributions(*model, batch, rows, out);
  } else if (const auto* ensemble = std::get_if<EnsembleNode>(&node)) {
    if (!Linear(ensemble->combine)) {
      throw std::invalid_argument("contributions of a min, max or median ensemble are not exact: it is not linear");
    }
    // out = w1*c1 + w2*c2 + ... in member order, then / (w1 + w2 + ...) for a mean. Transforms
    // are left out: the contributions explain the combined raw score (the JVM refuses
    // transforms an outer ensemble would combine).
    std::vector<double> member(rows.size() * width);
    for (size_t m = 0; m < ensemble->members.size(); ++m) {
      EvalContributions(ensemble->members[m], batch, rows, member.data(), stats);
      const double w = ensemble->weights[m];
      for (size_t i = 0; i < member.size(); ++i) out[i] = m == 0 ? w * member[i] : out[i] + w * member[i];
    }
    if (ensemble->combine == Combine::kMean) {
      const double weight_sum = WeightSum(ensemble->weights);
      for (size_t i = 0; i < member.size(); ++i) out[i] /= weight_sum;
    }
  } else if (const auto* route = std::get_if<RouteNode>(&node)) {
    const RouteGroups groups(*route, batch.route_index, num_route_slots_, rows);
    for (size_t i : groups.unrouted) {
      std::fill(out + i * width, out + (i + 1) * width, std::numeric_limits<double>::quiet_NaN());
    }
    for (size_t r = 0; r < groups.rows.size(); ++r) {
      contributions_into(route->routes[r], groups.rows[r], groups.positions[r]);
    }
  } else {
    // The first stage's output decides, exactly as when scoring; each row then takes the
    // contributions of the stage that answered it.
    const auto& cascade = std::get<CascadeNode>(node);
    std::vector<double> first(rows.size());
    EvalNode(cascade.first, batch, rows, first.data(), stats);
    const CascadeSplit split(cascade, first.data(), rows);
    contributions_into(cascade.first, split.rows[0], split.positions[0]);
    contributions_into(cascade.full, split.rows[1], split.positions[1]);
    stats->escalated += static_cast<int64_t>(split.rows[1].size());
  }
}

void Program::CheckArguments(const FeatureBatch& input, int64_t rows, const int32_t* route_index,
                             const GridPoints& grid) const {
  if (rows < 0) throw std::invalid_argument("negative row count");
  if (input.num_cols != num_inputs_) {
    throw std::invalid_argument("the program reads " + std::to_string(num_inputs_) + " inputs but the batch has " +
                                std::to_string(input.num_cols));
  }
  if (grid.points >= 1 && rows / grid.points > input.num_rows) {
    throw std::invalid_argument("the batch has " + std::to_string(input.num_rows) + " rows, fewer than the " +
                                std::to_string(rows / grid.points) + " base rows scored");
  }
  if (rows > 0 && input.num_cols > 0) {
    if (input.columns == nullptr) throw std::invalid_argument("the batch has no column pointers");
    for (int32_t f = 0; f < input.num_cols; ++f) {
      if (input.columns[f] == nullptr) throw std::invalid_argument("the batch's column " + std::to_string(f) + " is null");
    }
  }
  if (num_route_slots_ > 0 && route_index == nullptr && rows > 0) throw std::invalid_argument("route indices missing");
  if (grid.points < 1 || rows % grid.points != 0) throw std::invalid_argument("rows must be whole grids");
  std::vector<bool> seen(static_cast<size_t>(num_inputs_));
  for (int32_t v : grid.varying) {
    if (v < 0 || v >= num_inputs_ || seen[static_cast<size_t>(v)]) {
      throw std::invalid_argument("grid input " + std::to_string(v) + " is outside 0.." + std::to_string(num_inputs_ - 1) +
                                  " or listed twice");
    }
    seen[static_cast<size_t>(v)] = true;
  }
  if (!grid.varying.empty() && grid.values == nullptr && rows > 0) throw std::invalid_argument("grid values missing");
}

Program::Stats Program::Evaluate(const FeatureBatch& input, int64_t rows, const int32_t* route_index, int num_threads,
                                 const GridPoints& grid, int monotone, int run, double* out) const {
  CheckArguments(input, rows, route_index, grid);
  if (run < 1 || grid.points % run != 0) throw std::invalid_argument("a monotone run must divide the grid's points");
  Stats stats;
  EvalNode(static_cast<int>(nodes_.size()) - 1, Batch{&input, route_index, num_threads, &grid}, AllRows(rows), out,
           &stats);
  if (monotone != 0) {
    for (int64_t start = 0; start < rows; start += run) {
      for (int k = 1; k < run; ++k) {
        double& here = out[start + k];
        const double before = out[start + k - 1];
        here = monotone > 0 ? std::max(here, before) : std::min(here, before);
      }
    }
  }
  return stats;
}

Program::Stats Program::EvaluateContributions(const FeatureBatch& input, int64_t rows, const int32_t* route_index,
                                              int num_threads, const GridPoints& grid, double* out) const {
  CheckArguments(input, rows, route_index, grid);
  Stats stats;
  EvalContributions(static_cast<int>(nodes_.size()) - 1, Batch{&input, route_index, num_threads, &grid}, AllRows(rows),
                    out, &stats);
  return stats;
}

}  // namespace treescore
