// One batch through a top-K selector (selector.h): its rows as candidates, their partial raw
// sums per member, their bins for the rest bounds and the members their routes need, dropped
// stage by stage as their bounds fall below their groups' bars.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "rows/feature_batch.h"
#include "top_k/leaderboard.h"
#include "top_k/ranked_score.h"
#include "top_k/stage_schedule.h"

namespace treescore {

// The storage a selector lends each of its batches, so that batches after the first allocate
// nothing: what it holds belongs to the batch being selected, which rewrites it.
struct SelectionBuffers {
  // A row still being scored: its place in the batch, its place in the rows RunStage reads
  // (the batch itself, or the compacted survivors), its group, and the best key its score
  // can still reach.
  struct Candidate {
    int32_t row;
    int32_t slot;
    int32_t group;
    double best;
  };

  std::vector<Candidate> candidates;
  std::vector<double> sums;        // [row * members + m]: member m's partial raw sum
  std::vector<uint16_t> bins;      // [row * bins_per_row + ...]
  std::vector<uint8_t> binned;     // per row: whether its bins are found
  std::vector<uint8_t> needs;      // with routes, [row * members + m]: whether its score reads member m
  std::vector<uint8_t> unbounded;  // with routes, per row: a route it reaches picks none
  std::vector<uint8_t> reached;    // RankedScore::Needs' scratch
  std::vector<size_t> needing;     // RunStage's: the candidates that need its member
  std::vector<int32_t> picked;
  std::vector<double> running, member_values;
  std::vector<std::vector<const double*>> member_columns;
  RankedScore::Scratch combine_scratch;
  std::vector<double> bounds;      // SplitLeaders' grouped bounds
  std::vector<Candidate> leaders, others, chunk;
  std::vector<double> compacted;
  std::unique_ptr<RowMajor> compacted_rows;
};

class BatchSelection {
 public:
  // Checks the batch against what the selector reads; throws std::invalid_argument naming
  // what is wrong (too few columns, a negative group, route indices missing, a floor with
  // groups).
  BatchSelection(const RankedScore& score, const StageSchedule& schedule, bool descending, Leaderboard* leaderboard,
                 const FeatureBatch& rows, const int32_t* groups, double floor, const int32_t* routes,
                 SelectionBuffers* buffers);

  // TopKSelector::Select's work: sets kept[r] and, for kept rows, scores[r]; returns the rows kept.
  int32_t Run(int32_t* kept, double* scores);

  int64_t trees_evaluated() const { return trees_evaluated_; }
  int64_t trees_in_full() const { return trees_in_full_; }

 private:
  using Candidate = SelectionBuffers::Candidate;

  // The key rows are ranked by, larger is better: the score, or its negation when ascending.
  double Key(double score) const { return descending_ ? score : -score; }
  double Bar(int32_t group) const { return leaderboard_->Bar(group, floor_); }
  const int32_t* RowRoutes(int32_t row) const;
  // Batch row `row`'s score from its members' raw sums.
  double Score(int32_t row);
  // The best key batch row `row` can still reach after steps [0, step): by the bounds for its
  // bins (`binned`, once FindBins has found them) or for any row's.
  double BestKey(int32_t row, size_t step, bool binned);
  // The candidate's bins for its members' rest bounds, read from its row `slot` of `rows`,
  // unless found before in this batch.
  void FindBins(const FeatureBatch& rows, const Candidate& candidate);
  // Splits the candidates, keeping their order, into each group's leaders (the candidates with
  // the best bounds, enough to fill its k and kExtraLeaders more) and the others.
  void SplitLeaders(const std::vector<Candidate>& candidates, std::vector<Candidate>* leaders,
                    std::vector<Candidate>* others);
  // Drops the candidates whose best key is below their group's bar.
  void DropBeaten(std::vector<Candidate>* candidates) const;
  // Runs steps [from, steps) over the candidates, dropping those that fall below their bar
  // before each, then offers the rest; sets their kept flags and scores.
  void Finish(const FeatureBatch& rows, std::vector<Candidate>* candidates, size_t from, int32_t* kept, double* scores);
  // Adds step `step`'s trees to each candidate's sum, reading its row `slot` of `rows`.
  void RunStage(const FeatureBatch& rows, size_t step, std::vector<Candidate>* candidates);
  // Copies the candidates' rows (the columns some tree reads) into compacted_, row after row,
  // and points their slots there.
  const FeatureBatch& Compact(std::vector<Candidate>* candidates);

  const RankedScore& score_;
  const StageSchedule& schedule_;
  const std::vector<StagedModel>& members_;
  const bool descending_;
  Leaderboard* leaderboard_;
  const FeatureBatch& rows_;
  const int32_t* routes_;
  double floor_;
  SelectionBuffers& buffers_;
  int64_t trees_evaluated_ = 0;
  int64_t trees_in_full_ = 0;
};

}  // namespace treescore
