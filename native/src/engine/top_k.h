// Exact top-K selection: the rows that can belong to a top-K (per group), found while scoring as
// few trees as it takes to rule the others out (Willump, MLSys 2020, made exact).
//
// A raw score is a left fold over the trees, and each tree adds one of its leaf values, so after
// the first trees a row's final raw score lies between its partial sum plus the smallest leaves
// of the trees left and its partial sum plus their largest leaves, or, tighter, the smallest and
// largest leaves the row's values of a few features let each tree reach (rest_bounds.h). The
// bound for any row is tried first, since it drops most rows at no cost. The trees are cut into
// stages; after each stage a row whose best possible score is below the k-th best exact score
// of its group so far cannot be in that group's top k, and is dropped unscored. The rest finish
// every stage, continuing the same fold, so their scores are the bits a full score gives.
//
// Why the result is exact: a dropped row is strictly beaten by k rows of its group that were
// kept, whichever way ties are broken, so removing it changes neither the top k of a sort nor
// the rank of any row ranked k or better. Rows that tie with the k-th are kept. The bounds hold
// in floating point: each is widened by an error bound of the remaining additions, and bounds
// on predictions are taken through the objective's transform (nondecreasing in every objective
// with one output) and then widened by a few ulps.
//
// An ensemble with non-negative weights is bounded through its members: each member's output
// is bounded as one model's, and the ensemble's combination and transforms, nondecreasing in
// each member's output, turn the members' bounds into a bound on the ensemble's score. An
// ensemble among an ensemble's members is bounded the same way, innermost first. A route's
// output is the output of the part its row's key picks, so its bound is that part's bound, and
// a row scores (and is bounded by) only the members on the parts its routes pick.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "../combine.h"
#include "rows/feature_batch.h"
#include "exact_scorer.h"
#include "rest_bounds.h"

namespace treescore {
namespace engine {

// What a top-K query keeps: per group, the k rows with the largest scores (descending) or the
// smallest (ascending), and every row that ties with the k-th.
struct TopKQuery {
  int k = 1;
  bool descending = true;
};

// A model whose output a top-K query ranks, alone or as an ensemble's member.
struct TopKMember {
  const ExactScorer* model = nullptr;  // must outlive the selector
  bool raw = false;                    // its raw margin; otherwise its prediction
  IterationRange iterations;
  // The batch column each model feature reads (one per feature); empty: feature f reads column f.
  std::vector<int32_t> columns;
};

// An ensemble: its parts' outputs, each times its weight, combined, then transformed (combine.h,
// as Program scores it). A part is a member model or an ensemble listed before this one. With
// route_slot >= 0 it is a route instead: its output is the part that the row's route index in
// that slot picks (weights, combine and transforms unused), NaN where the index is -1.
struct TopKEnsemble {
  struct Part {
    bool ensemble = false;  // false: members[index]; true: ensembles[index], an earlier one
    size_t index = 0;
    double weight = 1;
  };
  std::vector<Part> parts;
  treescore::Combine combine = treescore::Combine::kMean;
  std::vector<treescore::Transform> transforms;  // not the objective's engine::Transform
  int route_slot = -1;
};

class TopKSelector {
 public:
  // Ranks one model's scores. Throws std::invalid_argument for a model with more than one
  // output per row or a k below 1. trees_per_stage <= 0 picks each model's stage size from
  // its number of trees.
  TopKSelector(TopKMember model, TopKQuery query, int trees_per_stage = 0);
  // Ranks the scores of the last of `ensembles`, whose parts are `members` and the ensembles
  // before it (nested ensembles, innermost first). Each member's bound is a bound on its
  // output; for non-negative weights every combination (sum, mean, min, max, median) is
  // nondecreasing in each weighted output, and every transform in its input, so an ensemble's
  // bound is the combination of its parts' bounds. A negative weight, a part that is not
  // listed before its ensemble or a route slot not below route_slots throws; an ensemble whose
  // weighted outputs could be infinite (or NaN) is scored in full.
  TopKSelector(std::vector<TopKMember> members, std::vector<TopKEnsemble> ensembles, TopKQuery query,
               int trees_per_stage = 0, int route_slots = 0);

  // Scores what it must of the batch. groups[r] (nullptr: every row in group 0) is row r's
  // group, 0 or more. Sets kept[r] to 1 for each row that may belong to its group's top k, and
  // scores[r] to its exact score; other rows get kept[r] = 0. Groups' best scores carry over
  // from batch to batch. `floor` is a key that k rows kept elsewhere reach (-inf if none is
  // known; with one group only): rows whose key falls below it are dropped too, since those k
  // rows beat them. `routes` (with routes: rows x route_slots indices, as Program::Evaluate
  // takes them) says which part each route picks for each row; a row a route scores NaN for
  // (index -1) is kept, unbounded. Returns the number of rows kept.
  int32_t Select(const FeatureBatch& rows, const int32_t* groups, double floor, int32_t* kept, double* scores,
                 const int32_t* routes = nullptr);

  // Group 0's best keys so far (at most k of them, in no order): what other scans of the same
  // query may take as their floor once this scan's rows are all kept or dropped.
  std::vector<double> BestKeys() const { return best_.empty() ? std::vector<double>() : best_.front(); }

  // Tree evaluations so far, and how many a full score of the same rows takes.
  int64_t trees_evaluated() const { return trees_evaluated_; }
  int64_t trees_in_full() const { return trees_in_full_; }
  // Stages over all members: runs of one member's trees, taken round-robin.
  int num_stages() const { return static_cast<int>(steps_.size()); }
  // Whether rows are ever dropped before their last stage (false: every row is scored in full).
  bool boundable() const { return boundable_; }

 private:
  // A row still being scored: its place in the batch, its group, and the best key its score
  // can still reach. Its partial raw sums (one per member) are sums_[row * members + m], and
  // its members' rest bins are bins_[row * bins_per_row_ + ...].
  struct Candidate {
    int32_t row;   // in the batch
    int32_t slot;  // in the batch RunStage reads: the batch itself, or the compacted survivors
    int32_t group;
    double best;
  };
  // One member's trees cut into stages, with what bounds its output after each.
  struct Member {
    // Cuts the member's trees into stages of trees_per_stage (<= 0: a fifth of them, at least
    // 10); throws std::invalid_argument for a model with more than one output or bad columns.
    Member(TopKMember member, int trees_per_stage);
    // Whether `holds` is true of every leaf value of its trees.
    bool EveryLeaf(bool (*holds)(double)) const;

    TopKMember spec;
    std::vector<ExactScorer> stages;  // consecutive runs of the member's trees
    std::vector<int> stage_trees;     // trees per stage
    RestBounds rest;                  // what the trees after each stage can add
    std::vector<int32_t> bin_columns;  // the batch column of each feature `rest` conditions on
    std::vector<const double*> view_columns;  // scratch for MemberRows
  };
  // A stage of the schedule: stage `stage` of member `member`.
  struct Step {
    size_t member;
    size_t stage;
  };

  // The steps (every member's first stage, then every second, ...), the columns the members'
  // trees read, and the columns a batch needs; checks k.
  void Schedule();
  // The key rows are ranked by, larger is better: the score, or its negation when ascending.
  double Key(double score) const { return query_.descending ? score : -score; }
  // Member m's output from its raw sum (averaged for random forests, transformed for predictions).
  double MemberOutput(size_t m, double raw) const;
  // Batch row `row`'s score from its members' raw sums: the one member's output, or the root
  // ensemble's.
  double Score(int32_t row);
  // Every ensemble's value, innermost first, into ensemble_values_, from its members' values
  // (their outputs, or bounds on them) in member_values_; returns the root's. widen = +1 (-1)
  // moves the result of each transform that is not exactly monotone up (down) by
  // kTransformUlps, so that bounds stay bounds; 0 computes the score as Program does. Routes
  // pick batch row `row`'s part, or, for row -1 (any row), the largest (widen > 0) or smallest
  // of their parts.
  double Combined(int widen, int32_t row);
  // Which members batch row `row` needs (its routes' picks, down from the root) into needs_,
  // and whether a route it reaches picks nothing (then its score is NaN, and no bound holds).
  void FindNeeds(int32_t row);
  // The value of one of an ensemble's parts, and that times its weight, once Combined has
  // reached that ensemble.
  double PartValue(const TopKEnsemble::Part& part) const;
  double WeightedPart(const TopKEnsemble::Part& part) const;
  // A bound on member m's output given its partial sum `sum` after `done` of its stages and
  // the row's bins for its rest bounds (nullptr: any row's): at least (upper) or at most
  // (lower) any output it can end with.
  double MemberBound(size_t m, double sum, size_t done, const uint16_t* bins, bool upper) const;
  // The best key batch row `row` can still reach after steps [0, step): by the bounds for its
  // bins (`binned`, once FindBins has found them) or for any row's.
  double BestKey(int32_t row, size_t step, bool binned);
  // The candidate's bins for its members' rest bounds, read from its row `slot` of `rows`,
  // into bins_, unless found before in this batch.
  void FindBins(const FeatureBatch& rows, const Candidate& candidate);
  // The key a row must reach to be kept in `group`: the k-th best so far (-inf until k are
  // known), or the batch's floor where that is higher.
  double Bar(int32_t group) const;
  // Records a fully scored row; returns whether it is kept.
  bool Offer(int32_t group, double key);
  // Splits the candidates, keeping their order, into each group's leaders (the candidates with
  // the best bounds, enough to fill its k and kExtraLeaders more) and the others.
  void SplitLeaders(const std::vector<Candidate>& candidates, std::vector<Candidate>* leaders,
                    std::vector<Candidate>* others);
  // Runs steps [from, steps) over the candidates, dropping those that fall below their bar
  // before each, then offers the rest; sets their kept flags and scores.
  void Finish(const FeatureBatch& rows, std::vector<Candidate>* candidates, size_t from, int32_t* kept, double* scores);
  // Adds step `step`'s trees to each candidate's sum, reading its row `slot` of `rows`.
  void RunStage(const FeatureBatch& rows, size_t step, std::vector<Candidate>* candidates);
  // Member m's view of a batch: its features' columns, in its feature order.
  FeatureBatch MemberRows(const FeatureBatch& rows, size_t m);
  // Copies the candidates' rows (the columns some tree reads) into compacted_, row after row,
  // and points their slots there.
  const FeatureBatch& Compact(const FeatureBatch& rows, std::vector<Candidate>* candidates);

  std::vector<Member> members_;
  std::vector<TopKEnsemble> ensembles_;  // empty: one model's scores; else the last is the root
  std::vector<double> weight_sums_;      // per ensemble: what a mean divides by
  int route_slots_ = 0;
  bool routed_ = false;                  // whether a route is among the ensembles
  const int32_t* routes_ = nullptr;      // the batch's route indices
  // Per batch row (with routes only): which members it needs, and whether it is unbounded.
  std::vector<uint8_t> needs_, unbounded_;
  std::vector<uint8_t> active_;          // FindNeeds' scratch: per ensemble
  TopKQuery query_;
  bool boundable_ = true;           // false: every row is scored fully
  std::vector<Step> steps_;         // round-robin: every member's first stage, then every second, ...
  std::vector<std::vector<size_t>> done_after_;  // per step boundary: stages done of each member
  size_t first_round_ = 0;          // steps in the first round: one per member
  std::vector<int32_t> read_columns_;  // the batch columns some member's trees read
  int32_t needed_columns_ = 0;         // the batch columns a member reads, at least
  // Per group, the best keys so far, at most k of them, smallest first (a min-heap).
  std::vector<std::vector<double>> best_;
  double floor_ = -std::numeric_limits<double>::infinity();  // the batch's floor
  // Scratch reused across stages and rows: the candidates' sums, slots and running sums,
  // member outputs or bounds, and compacted rows.
  std::vector<double> sums_;
  std::vector<uint16_t> bins_;
  std::vector<uint8_t> binned_;    // per batch row: whether its bins are found
  std::vector<size_t> first_bin_;  // per member: where its bins start in a row's
  size_t bins_per_row_ = 0;
  std::vector<size_t> needing_;  // RunStage's: the candidates that need its member
  std::vector<int32_t> picked_;
  std::vector<double> running_;
  std::vector<double> member_values_, ensemble_values_, median_scratch_;
  std::vector<std::vector<double>> weighted_;  // per ensemble: its weighted parts
  std::vector<double> bounds_;  // SplitLeaders' grouped bounds
  std::vector<double> compacted_;
  std::unique_ptr<RowMajor> compacted_rows_;
  int64_t trees_evaluated_ = 0;
  int64_t trees_in_full_ = 0;
};

}  // namespace engine
}  // namespace treescore
