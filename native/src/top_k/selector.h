// Exact top-K selection: the rows that can belong to a top-K (per group), found while scoring as
// few trees as it takes to rule the others out (Willump, MLSys 2020, made exact).
//
// A raw score is a left fold over the trees, and each tree adds one of its leaf values, so after
// the first trees a row's final raw score lies between its partial sum plus the smallest leaves
// of the trees left and its partial sum plus their largest leaves, or, tighter, the smallest and
// largest leaves the row's values of a few features let each tree reach (engine/rest_bounds.h).
// The bound for any row is tried first, since it drops most rows at no cost. The trees are cut
// into stages (StagedModel); after each stage a row whose best possible score is below the k-th
// best exact score of its group so far (Leaderboard) cannot be in that group's top k, and is
// dropped unscored. The rest finish every stage, continuing the same fold, so their scores are
// the bits a full score gives. An ensemble program's score is bounded through its members
// (RankedScore), and a row scores only the members its routes pick.
//
// Why the result is exact: a dropped row is strictly beaten by k rows of its group that were
// kept, whichever way ties are broken, so removing it changes neither the top k of a sort nor
// the rank of any row ranked k or better. Rows that tie with the k-th are kept. The bounds hold
// in floating point: each is widened by an error bound of the remaining additions, and bounds
// on predictions are taken through the objective's transform (nondecreasing in every objective
// with one output) and then widened by a few ulps.
#pragma once

#include <cstdint>
#include <vector>

#include "rows/feature_batch.h"
#include "top_k/batch_selection.h"
#include "top_k/leaderboard.h"
#include "top_k/ranked_score.h"
#include "top_k/stage_schedule.h"

namespace treescore {

// What a top-K query keeps: per group, the k rows with the largest scores (descending) or the
// smallest (ascending), and every row that ties with the k-th.
struct TopKQuery {
  int k = 1;
  bool descending = true;
};

class TopKSelector {
 public:
  // Throws std::invalid_argument for a k below 1.
  TopKSelector(RankedScore score, TopKQuery query);

  // Scores what it must of the batch. groups[r] (nullptr: every row in group 0) is row r's
  // group, 0 or more. Sets kept[r] to 1 for each row that may belong to its group's top k, and
  // scores[r] to its exact score; other rows get kept[r] = 0. Groups' best scores carry over
  // from batch to batch. `floor` is a key that k rows kept elsewhere reach (-inf if none is
  // known; with one group only): rows whose key falls below it are dropped too, since those k
  // rows beat them. `routes` (with routes: rows x route slots indices, as Program::Evaluate
  // takes them) says which part each route picks for each row; a row a route scores NaN for
  // (index -1) is kept, unbounded. Returns the number of rows kept.
  int32_t Select(const FeatureBatch& rows, const int32_t* groups, double floor, int32_t* kept, double* scores,
                 const int32_t* routes = nullptr);

  // Group 0's best keys so far (at most k of them, in no order): what other scans of the same
  // query may take as their floor once this scan's rows are all kept or dropped.
  std::vector<double> BestKeys() const { return leaderboard_.BestKeys(); }

  // Tree evaluations so far, and how many a full score of the same rows takes.
  int64_t trees_evaluated() const { return trees_evaluated_; }
  int64_t trees_in_full() const { return trees_in_full_; }
  // Stages over all members: runs of one member's trees, taken round-robin.
  int num_stages() const { return static_cast<int>(schedule_.steps().size()); }
  // Whether rows are ever dropped before their last stage (false: every row is scored in full).
  bool boundable() const { return score_.boundable(); }

 private:
  RankedScore score_;
  TopKQuery query_;
  StageSchedule schedule_;
  Leaderboard leaderboard_;
  SelectionBuffers buffers_;
  int64_t trees_evaluated_ = 0;
  int64_t trees_in_full_ = 0;
};

}  // namespace treescore
