#include "top_k.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>

namespace treescore {
namespace engine {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
// Twice the unit roundoff of a double: one addition's relative error is at most half of it.
constexpr double kRoundoff = std::numeric_limits<double>::epsilon();
// The ulps a bound on a prediction is widened by: the transforms (exp, log1p, division) are
// each within an ulp of a nondecreasing function, so nearby raw scores never swap by more.
constexpr int kTransformUlps = 4;
// Rows of a group scored to the end first, beyond the ones its k needs, so that its bar rises
// early in each batch.
constexpr size_t kExtraLeaders = 16;

// Rows taken through their stages together: 512 rows of 200 features are 800 KiB, which stay
// in a core's L2 cache from one stage to the next.
constexpr size_t kChunkRows = 512;
// Stages of a fifth of the trees, at least 10 each. Each stage a row takes costs a fixed part
// (its features read and scanned once per stage, whatever the stage's size) on top of its
// trees, so fewer, longer stages win until rows stay in too long: measured on bench/'s 300-tree
// model, fifths beat tenths and quarters.
int DefaultTreesPerStage(int num_trees) { return std::max(10, (num_trees + 4) / 5); }

}  // namespace

TopKSelector::TopKSelector(const ExactScorer& model, TopKQuery query, int trees_per_stage)
    : model_(&model), query_(query) {
  const Forest& forest = model.forest();
  if (forest.num_classes != 1) {
    throw std::invalid_argument("top-K selection needs a model with one output per row, not " +
                                std::to_string(forest.num_classes));
  }
  if (query.k < 1) throw std::invalid_argument("top-K needs k of 1 or more, got " + std::to_string(query.k));
  int first = 0, count = 0;
  model.Range(query.iterations, &first, &count);
  const int num_trees = count * forest.trees_per_iteration;
  if (trees_per_stage <= 0) trees_per_stage = DefaultTreesPerStage(num_trees);

  const auto query_trees = forest.trees.begin() + first * forest.trees_per_iteration;  // the query's first tree
  std::vector<bool> read(static_cast<size_t>(forest.num_features));
  for (auto tree = query_trees; tree != query_trees + num_trees; ++tree) {
    for (double v : tree->leaf_value) boundable_ = boundable_ && !std::isnan(v);
    for (int n = 0; n + 1 < tree->num_leaves; ++n) read[static_cast<size_t>(tree->split_feature[static_cast<size_t>(n)])] = true;
  }
  for (size_t f = 0; f < read.size(); ++f) {
    if (read[f]) read_features_.push_back(static_cast<int>(f));
  }
  // Each stage is a forest of its own over a run of the query's trees, so that a stage
  // evaluates only its trees (QuickScorer otherwise evaluates every tree of a block at once).
  // There is always one stage, empty for an empty range.
  int begin = 0;
  do {
    const int end = std::min(num_trees, begin + trees_per_stage);
    Forest part;
    part.num_features = forest.num_features;
    part.trees.assign(query_trees + begin, query_trees + end);
    stages_.emplace_back(std::move(part), Layout::kAuto);
    stage_trees_.push_back(end - begin);
    begin = end;
  } while (begin < num_trees);
  // Boundary s comes after stages [0, s); the last boundary has no trees left.
  const size_t boundaries = stages_.size() + 1;
  rest_max_.assign(boundaries, 0.0);
  rest_min_.assign(boundaries, 0.0);
  rest_magnitude_.assign(boundaries, 0.0);
  rest_trees_.assign(boundaries, 0);
  auto tree = query_trees + num_trees;
  for (size_t s = stages_.size(); s-- > 0;) {
    double high = rest_max_[s + 1], low = rest_min_[s + 1], magnitude = rest_magnitude_[s + 1];
    for (int i = 0; i < stage_trees_[s]; ++i) {
      const std::vector<double>& leaves = (--tree)->leaf_value;
      const auto [least, most] = std::minmax_element(leaves.begin(), leaves.end());
      high += *most;
      low += *least;
      magnitude += std::max(std::fabs(*most), std::fabs(*least));
    }
    rest_max_[s] = high;
    rest_min_[s] = low;
    rest_magnitude_[s] = magnitude;
    rest_trees_[s] = rest_trees_[s + 1] + stage_trees_[s];
  }
}

double TopKSelector::Finish(double raw) const {
  if (query_.raw) return raw;
  model_->FinishPredictions(&raw, 1, query_.iterations);
  return raw;
}

double TopKSelector::BestKey(double sum, size_t stage) const {
  // The remaining additions are at most rest_trees_ roundings of values no larger in magnitude
  // than |sum| + rest_magnitude_; summing the bounds themselves rounds as often again.
  const double error = (2.0 * rest_trees_[stage] + 4.0) * kRoundoff * (std::fabs(sum) + rest_magnitude_[stage]);
  if (query_.descending) {
    double best = Finish(sum + rest_max_[stage] + error);
    for (int i = 0; i < kTransformUlps; ++i) best = std::nextafter(best, kInfinity);
    return best;
  }
  double least = Finish(sum + rest_min_[stage] - error);
  for (int i = 0; i < kTransformUlps; ++i) least = std::nextafter(least, -kInfinity);
  return -least;
}

double TopKSelector::Bar(int32_t group) const {
  const std::vector<double>& best = best_[static_cast<size_t>(group)];
  return static_cast<int>(best.size()) < query_.k ? floor_ : std::max(floor_, best.front());
}

bool TopKSelector::Offer(int32_t group, double key) {
  if (std::isnan(key)) return true;  // not ordered against the others: kept, and bars nothing
  std::vector<double>& best = best_[static_cast<size_t>(group)];
  if (static_cast<int>(best.size()) < query_.k) {
    best.push_back(key);
    std::push_heap(best.begin(), best.end(), std::greater<double>());
    return true;
  }
  if (key > best.front()) {
    std::pop_heap(best.begin(), best.end(), std::greater<double>());
    best.back() = key;
    std::push_heap(best.begin(), best.end(), std::greater<double>());
    return true;
  }
  return key == best.front();  // a tie with the k-th is kept
}

void TopKSelector::RunStage(const FeatureBatch& rows, size_t stage, std::vector<Candidate>* candidates) {
  const int32_t m = static_cast<int32_t>(candidates->size());
  if (m == 0) return;
  picked_.resize(static_cast<size_t>(m));
  sums_.resize(static_cast<size_t>(m));
  for (int32_t i = 0; i < m; ++i) {
    picked_[static_cast<size_t>(i)] = (*candidates)[static_cast<size_t>(i)].slot;
    sums_[static_cast<size_t>(i)] = (*candidates)[static_cast<size_t>(i)].sum;
  }
  stages_[stage].AddRaw(rows, picked_.data(), m, Iterations{}, sums_.data());
  for (int32_t i = 0; i < m; ++i) {
    Candidate& c = (*candidates)[static_cast<size_t>(i)];
    c.sum = sums_[static_cast<size_t>(i)];
    c.best = BestKey(c.sum, stage + 1);
  }
  trees_evaluated_ += static_cast<int64_t>(m) * stage_trees_[stage];
}

const FeatureBatch& TopKSelector::Compact(const FeatureBatch& rows, std::vector<Candidate>* candidates) {
  const size_t width = static_cast<size_t>(rows.num_cols);
  compacted_.resize(std::max<size_t>(1, candidates->size() * width));
  for (size_t i = 0; i < candidates->size(); ++i) {
    Candidate& c = (*candidates)[i];
    double* row = compacted_.data() + i * width;
    for (int f : read_features_) row[f] = rows.At(c.slot, f);  // no tree reads the others
    c.slot = static_cast<int32_t>(i);
  }
  compacted_rows_ = std::make_unique<RowMajor>(compacted_.data(), static_cast<int32_t>(candidates->size()), rows.num_cols);
  return compacted_rows_->batch();
}

void TopKSelector::Finish(const FeatureBatch& rows, std::vector<Candidate>* candidates, size_t from, int32_t* kept,
                          double* scores) {
  for (size_t stage = from; stage < stages_.size(); ++stage) {
    candidates->erase(std::remove_if(candidates->begin(), candidates->end(),
                                     [&](const Candidate& c) { return c.best < Bar(c.group); }),
                      candidates->end());
    RunStage(rows, stage, candidates);
  }
  for (const Candidate& c : *candidates) {
    const double score = Finish(c.sum);
    scores[c.row] = score;
    const double key = Key(score);
    kept[c.row] = (!(key < floor_) && Offer(c.group, key)) ? 1 : 0;
  }
}

int32_t TopKSelector::Select(const FeatureBatch& rows, const int32_t* groups, double floor, int32_t* kept,
                             double* scores) {
  const int32_t n = rows.num_rows;
  if (groups != nullptr && floor > -kInfinity) throw std::invalid_argument("a top-K floor needs one group");
  floor_ = std::isnan(floor) ? -kInfinity : floor;
  if (rows.num_cols < model_->forest().num_features) {
    throw std::invalid_argument("rows have fewer columns than the model's features");
  }
  std::vector<Candidate> candidates(static_cast<size_t>(n));
  for (int32_t r = 0; r < n; ++r) {
    const int32_t group = groups == nullptr ? 0 : groups[r];
    if (group < 0) throw std::invalid_argument("negative top-K group " + std::to_string(group));
    if (static_cast<size_t>(group) >= best_.size()) best_.resize(static_cast<size_t>(group) + 1);
    candidates[static_cast<size_t>(r)] = Candidate{r, r, group, 0.0, kInfinity};
    kept[r] = 0;
  }
  trees_in_full_ += static_cast<int64_t>(n) * rest_trees_[0];
  if (!boundable_) {  // no bound holds: every row scored and kept
    Finish(rows, &candidates, 0, kept, scores);
    for (int32_t r = 0; r < n; ++r) kept[r] = 1;
    return n;
  }
  RunStage(rows, 0, &candidates);
  // Each group's most promising rows are scored to the end first: they fill its k and raise its
  // bar before the other rows are judged against it.
  std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return a.group != b.group ? a.group < b.group : a.best > b.best;
  });
  std::vector<Candidate> leaders, others;
  for (size_t i = 0; i < candidates.size();) {
    size_t end = i;
    while (end < candidates.size() && candidates[end].group == candidates[i].group) ++end;
    const std::vector<double>& best = best_[static_cast<size_t>(candidates[i].group)];
    const size_t wanted = static_cast<size_t>(query_.k) - std::min(best.size(), static_cast<size_t>(query_.k)) + kExtraLeaders;
    const size_t split = std::min(end, i + wanted);
    leaders.insert(leaders.end(), candidates.begin() + static_cast<std::ptrdiff_t>(i),
                   candidates.begin() + static_cast<std::ptrdiff_t>(split));
    others.insert(others.end(), candidates.begin() + static_cast<std::ptrdiff_t>(split),
                  candidates.begin() + static_cast<std::ptrdiff_t>(end));
    i = end;
  }
  Finish(rows, &leaders, 1, kept, scores);
  // The other survivors of the first stage are copied out row after row, and run their stages
  // a chunk at a time, so that a chunk's features stay in cache from stage to stage: picked out
  // of the batch each time, every value would cost a cache line.
  others.erase(std::remove_if(others.begin(), others.end(), [&](const Candidate& c) { return c.best < Bar(c.group); }),
               others.end());
  std::sort(others.begin(), others.end(), [](const Candidate& a, const Candidate& b) { return a.row < b.row; });
  const FeatureBatch& survivors = Compact(rows, &others);
  std::vector<Candidate> chunk;
  for (size_t first = 0; first < others.size(); first += kChunkRows) {
    const size_t end = std::min(others.size(), first + kChunkRows);
    chunk.assign(others.begin() + static_cast<std::ptrdiff_t>(first), others.begin() + static_cast<std::ptrdiff_t>(end));
    Finish(survivors, &chunk, 1, kept, scores);
  }
  int32_t count = 0;
  for (int32_t r = 0; r < n; ++r) count += kept[r];
  return count;
}

}  // namespace engine
}  // namespace treescore
