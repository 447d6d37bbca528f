#include "program_top_k.h"

#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "engine/engine_predictor.h"

namespace treescore {

engine::TopKSelector TopKSelectorFor(const Program& program, engine::TopKQuery query, int trees_per_stage) {
  const std::vector<ProgramNode>& nodes = program.nodes();
  const auto* ensemble = std::get_if<EnsembleNode>(&nodes.back());
  if (ensemble == nullptr) throw std::invalid_argument("top-K selection over a program needs an ensemble at its root");
  std::vector<engine::TopKMember> members;
  for (size_t m = 0; m < ensemble->members.size(); ++m) {
    const auto* model = std::get_if<ModelNode>(&nodes[static_cast<size_t>(ensemble->members[m])]);
    if (model == nullptr) {
      throw std::invalid_argument("top-K selection over an ensemble needs models as members; member " +
                                  std::to_string(m) + " is not one");
    }
    const auto* engine_model = dynamic_cast<const engine::EnginePredictor*>(model->model.get());
    if (engine_model == nullptr) {
      throw std::invalid_argument("top-K selection needs every member on treescore's engine; member " +
                                  std::to_string(m) + " is not");
    }
    if (model->kind != PredictKind::kPrediction && model->kind != PredictKind::kRaw) {
      throw std::invalid_argument("top-K selection ranks predictions or raw scores only");
    }
    engine::TopKMember member;
    member.model = &engine_model->scorer();
    member.raw = model->kind == PredictKind::kRaw;
    member.columns = model->columns;
    member.weight = ensemble->weights[m];
    members.push_back(std::move(member));
  }
  return engine::TopKSelector(std::move(members), engine::TopKEnsemble{ensemble->combine, ensemble->transforms}, query,
                              trees_per_stage);
}

}  // namespace treescore
