// Exact top-K selection: the rows that can belong to a top-K (per group), found while scoring as
// few trees as it takes to rule the others out (Willump, MLSys 2020, made exact).
//
// A raw score is a left fold over the trees, and each tree adds one of its leaf values, so after
// the first trees a row's final raw score lies between its partial sum plus the smallest leaves
// of the trees left and its partial sum plus their largest leaves. The trees are cut into
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
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "../predictor.h"
#include "exact_scorer.h"

namespace treescore {
namespace engine {

// What a top-K query keeps: per group, the k rows with the largest scores (descending) or the
// smallest (ascending), and every row that ties with the k-th.
struct TopKQuery {
  int k = 1;
  bool descending = true;
  bool raw = false;  // the scores are raw margins; otherwise predictions
  Iterations iterations;
};

class TopKSelector {
 public:
  // Throws std::invalid_argument for a model with more than one output per row or a k below 1.
  // trees_per_stage <= 0 picks the stage size from the number of trees.
  TopKSelector(const ExactScorer& model, TopKQuery query, int trees_per_stage = 0);

  // Scores what it must of the batch. groups[r] (nullptr: every row in group 0) is row r's
  // group, 0 or more. Sets kept[r] to 1 for each row that may belong to its group's top k, and
  // scores[r] to its exact score; other rows get kept[r] = 0. Groups' best scores carry over
  // from batch to batch. `floor` is a key that k rows kept elsewhere reach (-inf if none is
  // known; with one group only): rows whose key falls below it are dropped too, since those k
  // rows beat them. Returns the number of rows kept.
  int32_t Select(const FeatureBatch& rows, const int32_t* groups, double floor, int32_t* kept, double* scores);

  // Group 0's best keys so far (at most k of them, in no order): what other scans of the same
  // query may take as their floor once this scan's rows are all kept or dropped.
  std::vector<double> BestKeys() const { return best_.empty() ? std::vector<double>() : best_.front(); }

  // Tree evaluations so far, and how many a full score of the same rows takes.
  int64_t trees_evaluated() const { return trees_evaluated_; }
  int64_t trees_in_full() const { return trees_in_full_; }
  int num_stages() const { return static_cast<int>(stages_.size()); }

 private:
  // A row still being scored: its place in the batch, its group and its partial raw score.
  struct Candidate {
    int32_t row;   // in the batch
    int32_t slot;  // in the batch RunStage reads: the batch itself, or the compacted survivors
    int32_t group;
    double sum;
    double best;  // the best key its score can still reach
  };

  // The key rows are ranked by, larger is better: the score, or its negation when ascending.
  double Key(double score) const { return query_.descending ? score : -score; }
  // The score a raw sum becomes (averaged for random forests, transformed for predictions).
  double Finish(double raw) const;
  // The best key a row with partial sum `sum` after `stage` stages can still reach.
  double BestKey(double sum, size_t stage) const;
  // The key a row must reach to be kept in `group`: the k-th best so far (-inf until k are
  // known), or the batch's floor where that is higher.
  double Bar(int32_t group) const;
  // Records a fully scored row; returns whether it is kept.
  bool Offer(int32_t group, double key);
  // Runs stages [from, stages) over the candidates, dropping those that fall below their bar
  // before each, then offers the rest; sets their kept flags and scores.
  void Finish(const FeatureBatch& rows, std::vector<Candidate>* candidates, size_t from, int32_t* kept, double* scores);
  // Adds stage `stage`'s trees to each candidate's sum, reading its row `slot` of `rows`.
  void RunStage(const FeatureBatch& rows, size_t stage, std::vector<Candidate>* candidates);
  // Copies the candidates' rows (the features the trees read) into compacted_, row after row,
  // and points their slots there.
  const FeatureBatch& Compact(const FeatureBatch& rows, std::vector<Candidate>* candidates);

  const ExactScorer* model_;
  TopKQuery query_;
  bool boundable_ = true;          // false when a leaf value is NaN: every row is then scored fully
  std::vector<ExactScorer> stages_;  // consecutive runs of the query's trees
  std::vector<int> stage_trees_;     // trees per stage
  // Per stage boundary s (after stages [0, s)): the sums of the remaining trees' largest and
  // smallest leaves, of their largest magnitudes (for the rounding bound), and their count.
  std::vector<double> rest_max_, rest_min_, rest_magnitude_;
  std::vector<int> rest_trees_;
  // Per group, the best keys so far, at most k of them, smallest first (a min-heap).
  std::vector<std::vector<double>> best_;
  double floor_ = -std::numeric_limits<double>::infinity();  // the batch's floor
  std::vector<int> read_features_;  // the features some tree of the query reads
  // Scratch reused across stages: the candidates' slots and running sums, and compacted rows.
  std::vector<int32_t> picked_;
  std::vector<double> sums_;
  std::vector<double> compacted_;
  std::unique_ptr<RowMajor> compacted_rows_;
  int64_t trees_evaluated_ = 0;
  int64_t trees_in_full_ = 0;
};

}  // namespace engine
}  // namespace treescore
