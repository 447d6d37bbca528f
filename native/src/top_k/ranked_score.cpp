#include "top_k/ranked_score.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <variant>

#include "program/combine.h"
#include "engine_predictor.h"
#include "top_k/widen.h"

namespace treescore {

RankedScore::RankedScore(const engine::ExactScorer& model, bool raw, model::IterationRange iterations, int trees_per_stage) {
  members_.emplace_back(model, raw, iterations, std::vector<int32_t>(), trees_per_stage);
  // One model's bound is its own output's: any leaf but NaN keeps it ordered.
  boundable_ = members_.front().EveryLeaf([](double v) { return !std::isnan(v); });
}

RankedScore::RankedScore(const Program& program, int trees_per_stage)
    : program_(&program), route_slots_(program.num_route_slots()) {
  const std::vector<ProgramNode>& nodes = program.nodes();
  if (!std::holds_alternative<EnsembleNode>(nodes.back()) && !std::holds_alternative<RouteNode>(nodes.back())) {
    throw std::invalid_argument("top-K selection over a program needs an ensemble or a route at its root");
  }
  weight_sums_.resize(nodes.size());
  std::vector<bool> added(nodes.size());
  AddPart(static_cast<int>(nodes.size()) - 1, 0, trees_per_stage, &added);
  CheckBoundable();
}

void RankedScore::AddPart(int index, size_t position, int trees_per_stage, std::vector<bool>* added) {
  if ((*added)[static_cast<size_t>(index)]) return;  // a node two parts share is scored once
  (*added)[static_cast<size_t>(index)] = true;
  const ProgramNode& node = program_->nodes()[static_cast<size_t>(index)];
  if (const auto* model = std::get_if<ModelNode>(&node)) {
    const auto* engine_model = dynamic_cast<const EnginePredictor*>(model->model.get());
    if (engine_model == nullptr) {
      throw std::invalid_argument("top-K selection needs every member on treescore's engine; member " +
                                  std::to_string(position) + " is not");
    }
    if (model->kind != PredictKind::kPrediction && model->kind != PredictKind::kRaw) {
      throw std::invalid_argument("top-K selection ranks predictions or raw scores only");
    }
    members_.emplace_back(engine_model->scorer(), model->kind == PredictKind::kRaw, model::IterationRange{}, model->columns,
                          trees_per_stage);
    member_node_.push_back(index);
    return;
  }
  if (std::holds_alternative<CascadeNode>(node)) {
    throw std::invalid_argument("top-K selection needs models, ensembles or routes as members; member " +
                                std::to_string(position) + " is a cascade");
  }
  if (const auto* route = std::get_if<RouteNode>(&node)) {
    if (route->routes.empty()) throw std::invalid_argument("a route ranked by top-K selection has no routes");
    if (route->slot < 0 || route->slot >= route_slots_) {
      throw std::invalid_argument("top-K route slot " + std::to_string(route->slot) + " of " +
                                  std::to_string(route_slots_));
    }
    routed_ = true;
    for (size_t r = 0; r < route->routes.size(); ++r) AddPart(route->routes[r], r, trees_per_stage, added);
  } else {
    const auto& ensemble = std::get<EnsembleNode>(node);
    if (ensemble.members.empty()) throw std::invalid_argument("an ensemble ranked by top-K selection has no members");
    for (double weight : ensemble.weights) {
      if (!(weight >= 0) || std::isinf(weight)) {
        throw std::invalid_argument("top-K selection over an ensemble needs finite weights of 0 or more, not " +
                                    std::to_string(weight));
      }
    }
    for (size_t m = 0; m < ensemble.members.size(); ++m) AddPart(ensemble.members[m], m, trees_per_stage, added);
    weight_sums_[static_cast<size_t>(index)] = WeightSum(ensemble.weights);
  }
  combinators_.push_back(index);  // after its parts
}

void RankedScore::CheckBoundable() {
  // With finite leaves, each member's output lies within its bounds over all its trees, and
  // each ensemble's within the combination of its parts' such bounds, so finite weighted
  // bounds there rule infinities out at every level.
  for (const StagedModel& member : members_) {
    boundable_ = boundable_ && member.EveryLeaf([](double v) { return std::isfinite(v); });
  }
  const std::vector<ProgramNode>& nodes = program_->nodes();
  Scratch scratch;
  std::vector<double> bounds(members_.size());
  for (const bool upper : {true, false}) {
    for (size_t m = 0; m < members_.size(); ++m) bounds[m] = members_[m].Bound(members_[m].base_score(), 0, nullptr, upper);
    FromMembers(bounds.data(), upper ? 1 : -1, nullptr, &scratch);
    const std::vector<double>& value = scratch.node_values;
    for (int index : combinators_) {
      if (const auto* route = std::get_if<RouteNode>(&nodes[static_cast<size_t>(index)])) {
        for (int part : route->routes) boundable_ = boundable_ && std::isfinite(value[static_cast<size_t>(part)]);
        continue;
      }
      const auto& ensemble = std::get<EnsembleNode>(nodes[static_cast<size_t>(index)]);
      for (size_t m = 0; m < ensemble.members.size(); ++m) {
        boundable_ = boundable_ && std::isfinite(ensemble.weights[m] * value[static_cast<size_t>(ensemble.members[m])]);
      }
      if (ensemble.combine == Combine::kMean) boundable_ = boundable_ && weight_sums_[static_cast<size_t>(index)] > 0;
    }
  }
}

double RankedScore::FromMembers(const double* member_values, int widen, const int32_t* row_routes, Scratch* scratch) const {
  if (program_ == nullptr) return member_values[0];
  const std::vector<ProgramNode>& nodes = program_->nodes();
  std::vector<double>& value = scratch->node_values;
  value.resize(nodes.size());
  for (size_t m = 0; m < members_.size(); ++m) value[static_cast<size_t>(member_node_[m])] = member_values[m];
  for (int index : combinators_) {
    double& result = value[static_cast<size_t>(index)];
    if (const auto* route = std::get_if<RouteNode>(&nodes[static_cast<size_t>(index)])) {
      if (row_routes == nullptr) {  // any row: the part that bounds every part
        result = value[static_cast<size_t>(route->routes.front())];
        for (int part : route->routes) {
          const double v = value[static_cast<size_t>(part)];
          if (widen > 0 ? result < v : v < result) result = v;
        }
      } else {
        const int32_t pick = route->Pick(row_routes, route_slots_, 0);
        result = pick == kNoRoute ? std::numeric_limits<double>::quiet_NaN()
                                  : value[static_cast<size_t>(route->routes[static_cast<size_t>(pick)])];
      }
      continue;
    }
    const auto& ensemble = std::get<EnsembleNode>(nodes[static_cast<size_t>(index)]);
    scratch->weighted.resize(ensemble.members.size());
    for (size_t m = 0; m < ensemble.members.size(); ++m) {
      scratch->weighted[m] = ensemble.weights[m] * value[static_cast<size_t>(ensemble.members[m])];
    }
    double combined = CombineRow(ensemble.combine, scratch->weighted, weight_sums_[static_cast<size_t>(index)],
                                 &scratch->median);
    for (const Transform& transform : ensemble.transforms) {
      combined = ApplyTransform(combined, transform);
      if (widen != 0 && !ExactlyMonotone(transform)) combined = WidenedPastTransform(combined, widen > 0);
    }
    result = combined;
  }
  return value.back();
}

bool RankedScore::Needs(const int32_t* row_routes, uint8_t* needs, std::vector<uint8_t>* reached) const {
  const std::vector<ProgramNode>& nodes = program_->nodes();
  reached->assign(nodes.size(), 0);
  reached->back() = 1;
  bool bounded = true;
  // Parts come before their wholes, so one pass from the root down reaches them all.
  for (auto it = combinators_.rbegin(); it != combinators_.rend(); ++it) {
    if (!(*reached)[static_cast<size_t>(*it)]) continue;
    if (const auto* route = std::get_if<RouteNode>(&nodes[static_cast<size_t>(*it)])) {
      const int32_t pick = route->Pick(row_routes, route_slots_, 0);
      if (pick == kNoRoute) {
        bounded = false;
      } else {
        (*reached)[static_cast<size_t>(route->routes[static_cast<size_t>(pick)])] = 1;
      }
      continue;
    }
    for (int member : std::get<EnsembleNode>(nodes[static_cast<size_t>(*it)]).members) {
      (*reached)[static_cast<size_t>(member)] = 1;
    }
  }
  for (size_t m = 0; m < members_.size(); ++m) needs[m] = (*reached)[static_cast<size_t>(member_node_[m])];
  return bounded;
}

}  // namespace treescore
