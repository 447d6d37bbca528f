#include "program_top_k.h"

#include <map>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "engine_predictor.h"

namespace treescore {
namespace {

// Reads a program's ensembles, routes and their member models into the selector's terms, each
// node once (a node two of them share is one member, scored once).
class SelectorSpec {
 public:
  explicit SelectorSpec(const Program& program) : nodes_(program.nodes()) {}

  // The part that node `index` is in the ensemble that lists it (as its member `position`).
  engine::TopKEnsemble::Part PartFor(int index, size_t position) {
    const ProgramNode& node = nodes_.at(static_cast<size_t>(index));
    if (std::holds_alternative<EnsembleNode>(node) || std::holds_alternative<RouteNode>(node)) {
      return {true, EnsembleIndex(index), 1};
    }
    const auto* model = std::get_if<ModelNode>(&node);
    if (model == nullptr) {
      throw std::invalid_argument("top-K selection needs models, ensembles or routes as members; member " +
                                  std::to_string(position) + " is a cascade");
    }
    return {false, MemberIndex(index, *model, position), 1};
  }

  // Lists the ensemble or route at node `index` after the ensembles and routes among its parts.
  size_t EnsembleIndex(int index) {
    if (const auto found = ensemble_of_node_.find(index); found != ensemble_of_node_.end()) return found->second;
    engine::TopKEnsemble ensemble;
    if (const auto* route = std::get_if<RouteNode>(&nodes_.at(static_cast<size_t>(index)))) {
      ensemble.route_slot = route->slot;
      for (size_t r = 0; r < route->routes.size(); ++r) ensemble.parts.push_back(PartFor(route->routes[r], r));
    } else {
      const auto& node = std::get<EnsembleNode>(nodes_.at(static_cast<size_t>(index)));
      ensemble.combine = node.combine;
      ensemble.transforms = node.transforms;
      for (size_t m = 0; m < node.members.size(); ++m) {
        engine::TopKEnsemble::Part part = PartFor(node.members[m], m);
        part.weight = node.weights[m];
        ensemble.parts.push_back(part);
      }
    }
    ensembles.push_back(std::move(ensemble));
    return ensemble_of_node_[index] = ensembles.size() - 1;
  }

  std::vector<engine::TopKMember> members;
  std::vector<engine::TopKEnsemble> ensembles;  // and routes, innermost first

 private:
  size_t MemberIndex(int index, const ModelNode& node, size_t position) {
    if (const auto found = member_of_node_.find(index); found != member_of_node_.end()) return found->second;
    const auto* engine_model = dynamic_cast<const EnginePredictor*>(node.model.get());
    if (engine_model == nullptr) {
      throw std::invalid_argument("top-K selection needs every member on treescore's engine; member " +
                                  std::to_string(position) + " is not");
    }
    if (node.kind != PredictKind::kPrediction && node.kind != PredictKind::kRaw) {
      throw std::invalid_argument("top-K selection ranks predictions or raw scores only");
    }
    engine::TopKMember member;
    member.model = &engine_model->scorer();
    member.raw = node.kind == PredictKind::kRaw;
    member.columns = node.columns;
    members.push_back(std::move(member));
    return member_of_node_[index] = members.size() - 1;
  }

  const std::vector<ProgramNode>& nodes_;
  std::map<int, size_t> member_of_node_, ensemble_of_node_;
};

}  // namespace

engine::TopKSelector TopKSelectorFor(const Program& program, engine::TopKQuery query, int trees_per_stage) {
  const std::vector<ProgramNode>& nodes = program.nodes();
  if (!std::holds_alternative<EnsembleNode>(nodes.back()) && !std::holds_alternative<RouteNode>(nodes.back())) {
    throw std::invalid_argument("top-K selection over a program needs an ensemble or a route at its root");
  }
  SelectorSpec spec(program);
  spec.EnsembleIndex(static_cast<int>(nodes.size()) - 1);
  return engine::TopKSelector(std::move(spec.members), std::move(spec.ensembles), query, trees_per_stage,
                              program.num_route_slots());
}

}  // namespace treescore
