#include "top_k/batch_selection.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>

namespace treescore {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
// Rows of a group scored to the end first, beyond the ones its k needs, so that its bar rises
// early in each batch.
constexpr size_t kExtraLeaders = 16;
// Rows taken through their stages together: 512 rows of 200 features are 800 KiB, which stay
// in a core's L2 cache from one stage to the next.
constexpr size_t kChunkRows = 512;

}  // namespace

BatchSelection::BatchSelection(const RankedScore& score, const StageSchedule& schedule, bool descending,
                               Leaderboard* leaderboard, const FeatureBatch& rows, const int32_t* groups, double floor,
                               const int32_t* routes, SelectionBuffers* buffers)
    : score_(score),
      schedule_(schedule),
      members_(score.members()),
      descending_(descending),
      leaderboard_(leaderboard),
      rows_(rows),
      routes_(routes),
      floor_(std::isnan(floor) ? -kInfinity : floor),
      buffers_(*buffers) {
  const int32_t n = rows.num_rows;
  const size_t num_members = members_.size();
  if (groups != nullptr && floor > -kInfinity) throw std::invalid_argument("a top-K floor needs one group");
  if (rows.num_cols < schedule.needed_columns()) {
    throw std::invalid_argument("rows have " + std::to_string(rows.num_cols) + " columns, the models read " +
                                std::to_string(schedule.needed_columns()));
  }
  if (score.routed() && routes == nullptr && n > 0) throw std::invalid_argument("route indices missing");
  buffers_.member_columns.resize(num_members);
  buffers_.candidates.resize(static_cast<size_t>(n));
  for (int32_t r = 0; r < n; ++r) {
    const int32_t group = groups == nullptr ? 0 : groups[r];
    if (group < 0) throw std::invalid_argument("negative top-K group " + std::to_string(group));
    leaderboard->Reach(group);
    buffers_.candidates[static_cast<size_t>(r)] = Candidate{r, r, group, kInfinity};
  }
  // Each member's running sum starts where its forest's sums start (ExactScorer::AddRaw continues them).
  buffers_.sums.resize(static_cast<size_t>(n) * num_members);
  for (size_t i = 0; i < buffers_.sums.size(); ++i) buffers_.sums[i] = members_[i % num_members].base_score();
  buffers_.bins.resize(std::max<size_t>(1, static_cast<size_t>(n) * schedule.bins_per_row()));
  buffers_.binned.assign(static_cast<size_t>(n), 0);
  buffers_.member_values.resize(num_members);
  if (score.routed()) {  // each row's full score evaluates the trees of the members its routes pick
    buffers_.needs.resize(static_cast<size_t>(n) * num_members);
    buffers_.unbounded.assign(static_cast<size_t>(n), 0);
    for (int32_t r = 0; r < n; ++r) {
      uint8_t* needs = buffers_.needs.data() + static_cast<size_t>(r) * num_members;
      buffers_.unbounded[static_cast<size_t>(r)] = score.Needs(RowRoutes(r), needs, &buffers_.reached) ? 0 : 1;
      for (size_t m = 0; m < num_members; ++m) {
        if (needs[m]) trees_in_full_ += members_[m].rest().Trees(0);
      }
    }
  } else {
    for (const StagedModel& member : members_) trees_in_full_ += static_cast<int64_t>(n) * member.rest().Trees(0);
  }
}

const int32_t* BatchSelection::RowRoutes(int32_t row) const {
  return routes_ == nullptr ? nullptr : routes_ + static_cast<size_t>(row) * static_cast<size_t>(score_.route_slots());
}

double BatchSelection::Score(int32_t row) {
  const double* sums = buffers_.sums.data() + static_cast<size_t>(row) * members_.size();
  for (size_t m = 0; m < members_.size(); ++m) buffers_.member_values[m] = members_[m].Output(sums[m]);
  return score_.FromMembers(buffers_.member_values.data(), 0, RowRoutes(row), &buffers_.combine_scratch);
}

double BatchSelection::BestKey(int32_t row, size_t step, bool binned) {
  if (!score_.boundable()) return kInfinity;  // nothing is dropped
  if (score_.routed() && buffers_.unbounded[static_cast<size_t>(row)]) return kInfinity;  // its score is NaN
  const std::vector<size_t>& done = schedule_.DoneAfter(step);
  const double* sums = buffers_.sums.data() + static_cast<size_t>(row) * members_.size();
  const uint16_t* bins = binned ? buffers_.bins.data() + static_cast<size_t>(row) * schedule_.bins_per_row() : nullptr;
  // Members a row does not need get bounds that nothing reads.
  for (size_t m = 0; m < members_.size(); ++m) {
    buffers_.member_values[m] = members_[m].Bound(sums[m], done[m], binned ? bins + schedule_.first_bin(m) : nullptr, descending_);
  }
  const double bound = score_.FromMembers(buffers_.member_values.data(), descending_ ? 1 : -1, RowRoutes(row), &buffers_.combine_scratch);
  return std::isnan(bound) ? kInfinity : Key(bound);
}

void BatchSelection::FindBins(const FeatureBatch& rows, const Candidate& candidate) {
  uint8_t& binned = buffers_.binned[static_cast<size_t>(candidate.row)];
  if (binned) return;
  binned = 1;
  uint16_t* bins = buffers_.bins.data() + static_cast<size_t>(candidate.row) * schedule_.bins_per_row();
  for (const StagedModel& member : members_) {
    const std::vector<int32_t>& columns = member.bin_columns();
    for (size_t i = 0; i < columns.size(); ++i) *bins++ = member.rest().Bin(i, rows.At(candidate.slot, columns[i]));
  }
}

void BatchSelection::RunStage(const FeatureBatch& rows, size_t step, std::vector<Candidate>* candidates) {
  const size_t num_members = members_.size();
  const StageSchedule::Step& at = schedule_.steps()[step];
  // The candidates that need the step's member: all of them, unless routes pick other members.
  buffers_.needing.clear();
  for (size_t i = 0; i < candidates->size(); ++i) {
    if (!score_.routed() || buffers_.needs[static_cast<size_t>((*candidates)[i].row) * num_members + at.member]) {
      buffers_.needing.push_back(i);
    }
  }
  const auto n = static_cast<int32_t>(buffers_.needing.size());
  if (n == 0) return;
  buffers_.picked.resize(static_cast<size_t>(n));
  buffers_.running.resize(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    const Candidate& c = (*candidates)[buffers_.needing[static_cast<size_t>(i)]];
    buffers_.picked[static_cast<size_t>(i)] = c.slot;
    buffers_.running[static_cast<size_t>(i)] = buffers_.sums[static_cast<size_t>(c.row) * num_members + at.member];
  }
  // Every row of the batch in order (the first round): read straight down the columns.
  bool every_row = n == rows.num_rows;
  for (int32_t i = 0; every_row && i < n; ++i) every_row = buffers_.picked[static_cast<size_t>(i)] == i;
  const StagedModel& member = members_[at.member];
  member.AddStage(at.stage, rows, every_row ? nullptr : buffers_.picked.data(), n, buffers_.running.data(), &buffers_.member_columns[at.member]);
  const size_t bins_per_row = schedule_.bins_per_row();
  for (int32_t i = 0; i < n; ++i) {
    Candidate& c = (*candidates)[buffers_.needing[static_cast<size_t>(i)]];
    buffers_.sums[static_cast<size_t>(c.row) * num_members + at.member] = buffers_.running[static_cast<size_t>(i)];
    // The bounds for any row first, which drop most rows as well; the rows they keep are
    // bounded again by their bins, found the first time.
    c.best = BestKey(c.row, step + 1, false);
    if (bins_per_row == 0 || c.best < Bar(c.group)) continue;
    FindBins(rows, c);
    c.best = BestKey(c.row, step + 1, true);
  }
  trees_evaluated_ += static_cast<int64_t>(n) * member.stage_trees(at.stage);
}

const FeatureBatch& BatchSelection::Compact(std::vector<Candidate>* candidates) {
  const size_t width = static_cast<size_t>(rows_.num_cols);
  buffers_.compacted.resize(std::max<size_t>(1, candidates->size() * width));
  for (size_t i = 0; i < candidates->size(); ++i) {
    Candidate& c = (*candidates)[i];
    double* row = buffers_.compacted.data() + i * width;
    for (int32_t f : schedule_.read_columns()) row[f] = rows_.At(c.slot, f);  // no tree reads the others
    c.slot = static_cast<int32_t>(i);
  }
  buffers_.compacted_rows = std::make_unique<RowMajor>(buffers_.compacted.data(), static_cast<int32_t>(candidates->size()), rows_.num_cols);
  return buffers_.compacted_rows->batch();
}

void BatchSelection::DropBeaten(std::vector<Candidate>* candidates) const {
  candidates->erase(std::remove_if(candidates->begin(), candidates->end(),
                                   [&](const Candidate& c) { return c.best < Bar(c.group); }),
                    candidates->end());
}

void BatchSelection::Finish(const FeatureBatch& rows, std::vector<Candidate>* candidates, size_t from, int32_t* kept,
                            double* scores) {
  for (size_t step = from; step < schedule_.steps().size(); ++step) {
    DropBeaten(candidates);
    RunStage(rows, step, candidates);
  }
  for (const Candidate& c : *candidates) {
    const double score = Score(c.row);
    scores[c.row] = score;
    const double key = Key(score);
    kept[c.row] = (!(key < floor_) && leaderboard_->Offer(c.group, key)) ? 1 : 0;
  }
}

void BatchSelection::SplitLeaders(const std::vector<Candidate>& candidates, std::vector<Candidate>* leaders,
                                  std::vector<Candidate>* others) {
  const size_t groups = leaderboard_->num_groups();
  // The candidates' bounds, grouped (a counting sort by group).
  std::vector<size_t> start(groups + 1, 0);
  for (const Candidate& c : candidates) ++start[static_cast<size_t>(c.group) + 1];
  for (size_t g = 0; g < groups; ++g) start[g + 1] += start[g];
  std::vector<size_t> filled(start.begin(), start.end() - 1);
  buffers_.bounds.resize(candidates.size());
  for (const Candidate& c : candidates) {
    buffers_.bounds[filled[static_cast<size_t>(c.group)]++] = std::isnan(c.best) ? kInfinity : c.best;  // NaN sorts nowhere
  }
  // Per group, the wanted-th best bound (-inf where every candidate is wanted): candidates
  // above it lead, and so do the first `ties` candidates equal to it.
  const auto k = static_cast<size_t>(leaderboard_->k());
  std::vector<double> threshold(groups, -kInfinity);
  std::vector<size_t> ties(groups, candidates.size());
  for (size_t g = 0; g < groups; ++g) {
    const size_t held = std::min(leaderboard_->Held(static_cast<int32_t>(g)), k);
    const size_t wanted = k - held + kExtraLeaders;
    const auto first = buffers_.bounds.begin() + static_cast<std::ptrdiff_t>(start[g]);
    const auto last = buffers_.bounds.begin() + static_cast<std::ptrdiff_t>(start[g + 1]);
    if (static_cast<size_t>(last - first) <= wanted) continue;
    const auto wanted_th = first + static_cast<std::ptrdiff_t>(wanted) - 1;
    std::nth_element(first, wanted_th, last, std::greater<double>());
    threshold[g] = *wanted_th;
    ties[g] = wanted - static_cast<size_t>(std::count_if(first, wanted_th, [&](double b) { return b > *wanted_th; }));
  }
  for (const Candidate& c : candidates) {
    const size_t g = static_cast<size_t>(c.group);
    const bool leads = c.best > threshold[g] || (c.best == threshold[g] && ties[g] > 0);
    if (leads && c.best == threshold[g]) --ties[g];
    (leads ? leaders : others)->push_back(c);
  }
}

int32_t BatchSelection::Run(int32_t* kept, double* scores) {
  const int32_t n = rows_.num_rows;
  std::fill(kept, kept + n, 0);
  if (!score_.boundable()) {  // no bound holds: every row scored and kept
    Finish(rows_, &buffers_.candidates, 0, kept, scores);
    std::fill(kept, kept + n, 1);
    return n;
  }
  const size_t first_round = schedule_.first_round();
  // The first round (every member's first stage) over every row.
  for (size_t step = 0; step < first_round; ++step) RunStage(rows_, step, &buffers_.candidates);
  DropBeaten(&buffers_.candidates);
  // Each group's most promising rows are scored to the end first: they fill its k and raise its
  // bar before the other rows are judged against it. Both sets stay in row order.
  std::vector<Candidate>& leaders = buffers_.leaders;
  std::vector<Candidate>& others = buffers_.others;
  leaders.clear();
  others.clear();
  SplitLeaders(buffers_.candidates, &leaders, &others);
  Finish(rows_, &leaders, first_round, kept, scores);
  // The other survivors of the first stage are copied out row after row, and run their stages
  // a chunk at a time, so that a chunk's features stay in cache from stage to stage: picked out
  // of the batch each time, every value would cost a cache line.
  DropBeaten(&others);
  const FeatureBatch& survivors = Compact(&others);
  std::vector<Candidate>& chunk = buffers_.chunk;
  for (size_t first = 0; first < others.size(); first += kChunkRows) {
    const size_t end = std::min(others.size(), first + kChunkRows);
    chunk.assign(others.begin() + static_cast<std::ptrdiff_t>(first), others.begin() + static_cast<std::ptrdiff_t>(end));
    Finish(survivors, &chunk, first_round, kept, scores);
  }
  int32_t count = 0;
  for (int32_t r = 0; r < n; ++r) count += kept[r];
  return count;
}

}  // namespace treescore
