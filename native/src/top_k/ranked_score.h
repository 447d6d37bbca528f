// What a top-K query ranks: one model's output, or an ensemble program's score, whose root is
// an ensemble or a route over models on treescore's engine (and ensembles and routes of the
// same kind nested in it). The program's own nodes say how members combine and which part a
// route picks, read here as Program::Evaluate reads them, so a row's score is the program's bits.
//
// Each member's output is bounded as one model's (StagedModel::Bound). An ensemble with
// non-negative weights is nondecreasing in each member's output: every floating-point step of
// the combination (a product by a weight of 0 or more, a sum, a quotient by a positive sum,
// min, max, a sort) is, and every transform is within an ulp of a nondecreasing function, so
// the combination of the members' bounds, widened past each such transform, bounds the
// ensemble's score, at every level of nesting. A route's output is the output of the part its
// row's index picks, so its bound is that part's bound.
#pragma once

#include <cstdint>
#include <vector>

#include "program/program.h"
#include "top_k/staged_model.h"

namespace treescore {

class RankedScore {
 public:
  // One model's output (its raw margin when `raw`, else its prediction) over `iterations`.
  RankedScore(const engine::ExactScorer& model, bool raw, model::IterationRange iterations, int trees_per_stage = 0);
  // `program`'s score; the program must outlive this. Throws std::invalid_argument, naming what
  // it found, for a root that is not an ensemble or a route, a cascade, a member on LightGBM's
  // predictor or scoring anything but its prediction or raw margin, or a negative or infinite
  // weight.
  explicit RankedScore(const Program& program, int trees_per_stage = 0);

  // The member models, each once however many ensembles list it.
  const std::vector<StagedModel>& members() const { return members_; }
  int route_slots() const { return route_slots_; }
  bool routed() const { return routed_; }
  // Whether every row's bounds hold: false when a weighted output could be infinite or NaN
  // (a sum of +inf and -inf, or 0 * inf, orders nothing), so every row must be scored in full.
  bool boundable() const { return boundable_; }

  // Scratch for FromMembers, one per caller: a value per program node, and an ensemble's weighted parts.
  struct Scratch {
    std::vector<double> node_values;
    std::vector<double> weighted, median;
  };
  // The score from the members' outputs, in members() order, for a row whose route indices are
  // row_routes[0 .. route_slots()). widen = +1 (-1) makes it a bound from bounds on the
  // outputs: each transform that is not exactly monotone moves its result up (down), and with
  // row_routes nullptr (any row) a route takes the largest (smallest) of its parts.
  double FromMembers(const double* member_values, int widen, const int32_t* row_routes, Scratch* scratch) const;
  // needs[m] (one per member) = whether the row's score reads member m: the members its routes
  // pick, from the root down. Returns false when a route it reaches picks none (its score is NaN).
  bool Needs(const int32_t* row_routes, uint8_t* needs, std::vector<uint8_t>* reached) const;

 private:
  // Adds node `index` as a part of the score; `position` names it in errors.
  void AddPart(int index, size_t position, int trees_per_stage, std::vector<bool>* added);
  void CheckBoundable();

  const Program* program_ = nullptr;  // null: one model's output
  std::vector<StagedModel> members_;
  std::vector<int> member_node_;        // per member: its program node
  std::vector<int> combinators_;        // the ensembles and routes scored, parts before wholes
  std::vector<double> weight_sums_;     // per program node: an ensemble's weight sum
  int route_slots_ = 0;
  bool routed_ = false;
  bool boundable_ = true;
};

}  // namespace treescore
