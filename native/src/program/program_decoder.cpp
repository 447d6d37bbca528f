#include "program/program_decoder.h"

#include <stdexcept>
#include <string>

namespace treescore {

namespace {

class CodeReader {
 public:
  CodeReader(const std::vector<int64_t>& code, const std::vector<double>& constants)
      : code_(code), constants_(constants) {}

  int64_t Next(const char* what) {
    if (pos_ >= code_.size()) throw std::invalid_argument(std::string("program code ends before ") + what);
    return code_[pos_++];
  }

  int64_t Next(const char* what, int64_t lo, int64_t hi) {
    const int64_t v = Next(what);
    if (v < lo || v > hi) {
      throw std::invalid_argument(std::string("program ") + what + " " + std::to_string(v) + " outside " +
                                  std::to_string(lo) + ".." + std::to_string(hi));
    }
    return v;
  }

  double Constant(const char* what) {
    if (cpos_ >= constants_.size()) throw std::invalid_argument(std::string("program constants end before ") + what);
    return constants_[cpos_++];
  }

  bool Done() const { return pos_ == code_.size() && cpos_ == constants_.size(); }

 private:
  const std::vector<int64_t>& code_;
  const std::vector<double>& constants_;
  size_t pos_ = 0;
  size_t cpos_ = 0;
};

constexpr int64_t kMaxCount = 1 << 20;

}  // namespace

Program DecodeProgram(const std::vector<int64_t>& code, const std::vector<double>& constants,
                      const std::vector<std::shared_ptr<const Predictor>>& models) {
  CodeReader in(code, constants);
  const int num_inputs = static_cast<int>(in.Next("input count", 0, kMaxCount));
  const int num_slots = static_cast<int>(in.Next("route slot count", 0, kMaxCount));
  const int64_t num_nodes = in.Next("node count", 1, kMaxCount);
  std::vector<ProgramNode> nodes;
  for (int64_t n = 0; n < num_nodes; ++n) {
    const int64_t earlier = n - 1;  // members must be earlier nodes: no cycles
    switch (static_cast<wire::ProgramNode>(in.Next("node type", 0, wire::kProgramNodeLast))) {
      case wire::ProgramNode::kModel: {
        ModelNode node;
        const int64_t slot = in.Next("model slot", 0, static_cast<int64_t>(models.size()) - 1);
        node.model = models[slot];
        if (!node.model) throw std::invalid_argument("program model slot is empty");
        node.kind = static_cast<PredictKind>(in.Next("model kind", 0, 1));
        const int64_t cols = in.Next("model column count", 0, kMaxCount);
        if (cols != node.model->num_features()) {
          throw std::invalid_argument("a program model reads " + std::to_string(cols) + " columns but has " +
                                      std::to_string(node.model->num_features()) + " features");
        }
        if (node.model->OutputsPerRow(node.kind, {}) != 1) {
          throw std::invalid_argument("ensemble members must give one output per row (no multiclass models)");
        }
        for (int64_t c = 0; c < cols; ++c) node.columns.push_back(static_cast<int32_t>(in.Next("column", 0, num_inputs - 1)));
        nodes.emplace_back(std::move(node));
        break;
      }
      case wire::ProgramNode::kEnsemble: {
        EnsembleNode node;
        node.combine = static_cast<Combine>(in.Next("combine rule", 0, wire::kCombineLast));
        const int64_t members = in.Next("member count", 1, kMaxCount);
        for (int64_t m = 0; m < members; ++m) node.members.push_back(static_cast<int>(in.Next("member", 0, earlier)));
        const int64_t transforms = in.Next("transform count", 0, kMaxCount);
        for (int64_t t = 0; t < transforms; ++t) {
          node.transforms.push_back({static_cast<EnsembleTransform>(in.Next("transform", 0, wire::kEnsembleTransformLast)), 0, 0});
        }
        for (int64_t m = 0; m < members; ++m) node.weights.push_back(in.Constant("weight"));
        for (Transform& t : node.transforms) {
          t.lo = in.Constant("clip low");
          t.hi = in.Constant("clip high");
        }
        nodes.emplace_back(std::move(node));
        break;
      }
      case wire::ProgramNode::kRoute: {
        RouteNode node;
        node.slot = static_cast<int>(in.Next("route slot", 0, num_slots - 1));
        const int64_t routes = in.Next("route count", 0, kMaxCount);
        for (int64_t r = 0; r < routes; ++r) node.routes.push_back(static_cast<int>(in.Next("route", 0, earlier)));
        nodes.emplace_back(std::move(node));
        break;
      }
      case wire::ProgramNode::kCascade: {
        CascadeNode node;
        node.first = static_cast<int>(in.Next("cascade first stage", 0, earlier));
        node.full = static_cast<int>(in.Next("cascade second stage", 0, earlier));
        node.accept_below = in.Constant("cascade accept_below");
        node.accept_above = in.Constant("cascade accept_above");
        nodes.emplace_back(std::move(node));
      }
    }
  }
  if (!in.Done()) throw std::invalid_argument("program has trailing code or constants");
  return Program(std::move(nodes), num_inputs, num_slots);
}

}  // namespace treescore
