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

TopKSelector::Member::Member(TopKMember member, int trees_per_stage) : spec(std::move(member)) {
  if (spec.model == nullptr) throw std::invalid_argument("a top-K member has no model");
  const model::Forest& forest = spec.model->forest();
  if (forest.num_classes != 1) {
    throw std::invalid_argument("top-K selection needs models with one output per row, not " +
                                std::to_string(forest.num_classes));
  }
  if (!spec.columns.empty() && static_cast<int>(spec.columns.size()) != forest.num_features) {
    throw std::invalid_argument("a top-K member reads " + std::to_string(spec.columns.size()) + " columns for " +
                                std::to_string(forest.num_features) + " features");
  }
  for (int32_t c : spec.columns) {
    if (c < 0) throw std::invalid_argument("negative top-K column " + std::to_string(c));
  }
  int first = 0, count = 0;
  spec.model->Range(spec.iterations, &first, &count);
  const int num_trees = count * forest.trees_per_iteration;
  const int per_stage = trees_per_stage > 0 ? trees_per_stage : DefaultTreesPerStage(num_trees);
  const size_t query_tree = static_cast<size_t>(first) * forest.trees_per_iteration;  // the query's first tree
  // Each stage is a forest of its own over a run of the trees, so that a stage evaluates only
  // its trees (QuickScorer otherwise evaluates every tree of a block at once). There is always
  // one stage, empty for an empty range.
  int begin = 0;
  do {
    const int end = std::min(num_trees, begin + per_stage);
    stages.emplace_back(forest.Slice(query_tree + static_cast<size_t>(begin), static_cast<size_t>(end - begin)), Layout::kAuto);
    stage_trees.push_back(end - begin);
    begin = end;
  } while (begin < num_trees);
  std::vector<const model::Tree*> trees;
  for (const ExactScorer& stage : stages) {
    for (const model::Tree& tree : stage.forest().trees) trees.push_back(&tree);
  }
  rest = RestBounds(forest.input_reading, trees, stage_trees);
  for (int f : rest.features()) bin_columns.push_back(spec.columns.empty() ? f : spec.columns[static_cast<size_t>(f)]);
}

bool TopKSelector::Member::EveryLeaf(bool (*holds)(double)) const {
  for (const ExactScorer& stage : stages) {
    for (const model::Tree& tree : stage.forest().trees) {
      if (!std::all_of(tree.leaf_value.begin(), tree.leaf_value.end(), holds)) return false;
    }
  }
  return true;
}

TopKSelector::TopKSelector(TopKMember model, TopKQuery query, int trees_per_stage) : query_(query) {
  members_.emplace_back(std::move(model), trees_per_stage);
  Schedule();
  boundable_ = members_.front().EveryLeaf([](double v) { return !std::isnan(v); });
}

TopKSelector::TopKSelector(std::vector<TopKMember> members, std::vector<TopKEnsemble> ensembles, TopKQuery query,
                           int trees_per_stage, int route_slots)
    : ensembles_(std::move(ensembles)), route_slots_(route_slots), query_(query) {
  if (members.empty() || ensembles_.empty()) {
    throw std::invalid_argument("top-K selection over an ensemble needs a member and an ensemble");
  }
  for (TopKMember& member : members) members_.emplace_back(std::move(member), trees_per_stage);
  for (size_t e = 0; e < ensembles_.size(); ++e) {
    const TopKEnsemble& ensemble = ensembles_[e];
    if (ensemble.parts.empty()) throw std::invalid_argument("a top-K ensemble has no members");
    if (ensemble.route_slot >= route_slots_) {
      throw std::invalid_argument("top-K route slot " + std::to_string(ensemble.route_slot) + " of " +
                                  std::to_string(route_slots_));
    }
    routed_ = routed_ || ensemble.route_slot >= 0;
    std::vector<double> weights;
    for (const TopKEnsemble::Part& part : ensemble.parts) {
      if (!(part.weight >= 0) || std::isinf(part.weight)) {
        throw std::invalid_argument("top-K selection over an ensemble needs finite weights of 0 or more, not " +
                                    std::to_string(part.weight));
      }
      if (part.ensemble ? part.index >= e : part.index >= members_.size()) {
        throw std::invalid_argument("top-K ensemble " + std::to_string(e) + " has a member that is not listed before it");
      }
      weights.push_back(part.weight);
    }
    weight_sums_.push_back(WeightSum(weights));
    weighted_.emplace_back(ensemble.parts.size());
  }
  member_values_.resize(members_.size());
  ensemble_values_.resize(ensembles_.size());
  Schedule();
  // Bounds combine only while no weighted output can be infinite: a sum of +inf and -inf, or
  // 0 * inf, is NaN, which no bound orders. With finite leaves, each member's output lies
  // within its bounds over all its trees, and each ensemble's within the combination of its
  // parts' such bounds, so finite weighted bounds there rule infinities out at every level.
  for (const Member& member : members_) {
    boundable_ = boundable_ && member.EveryLeaf([](double v) { return std::isfinite(v); });
  }
  for (const bool upper : {true, false}) {
    for (size_t m = 0; m < members_.size(); ++m) {
      member_values_[m] = MemberBound(m, members_[m].spec.model->forest().base_score, 0, nullptr, upper);
    }
    Combined(upper ? 1 : -1, -1);
    for (const TopKEnsemble& ensemble : ensembles_) {
      for (const TopKEnsemble::Part& part : ensemble.parts) {
        boundable_ = boundable_ && std::isfinite(ensemble.route_slot >= 0 ? PartValue(part) : WeightedPart(part));
      }
    }
  }
  for (size_t e = 0; e < ensembles_.size(); ++e) {
    const bool mean = ensembles_[e].route_slot < 0 && ensembles_[e].combine == treescore::Combine::kMean;
    if (mean) boundable_ = boundable_ && weight_sums_[e] > 0;
  }
}

void TopKSelector::Schedule() {
  if (query_.k < 1) throw std::invalid_argument("top-K needs k of 1 or more, got " + std::to_string(query_.k));
  std::vector<bool> read;  // by batch column
  size_t most_stages = 0;
  for (const Member& member : members_) {
    const TopKMember& spec = member.spec;
    const int num_features = spec.model->forest().num_features;
    const auto column_of = [&](int f) { return spec.columns.empty() ? f : spec.columns[static_cast<size_t>(f)]; };
    for (const ExactScorer& stage : member.stages) {
      for (int f : stage.forest().features_read) {
        const auto c = static_cast<size_t>(column_of(f));
        if (c >= read.size()) read.resize(c + 1);
        read[c] = true;
      }
    }
    for (int f = 0; f < num_features; ++f) needed_columns_ = std::max(needed_columns_, column_of(f) + 1);
    most_stages = std::max(most_stages, member.stages.size());
  }
  for (size_t c = 0; c < read.size(); ++c) {
    if (read[c]) read_columns_.push_back(static_cast<int32_t>(c));
  }
  // Round-robin, so that every member has been scored a little before any row is judged.
  done_after_.push_back(std::vector<size_t>(members_.size(), 0));
  for (size_t s = 0; s < most_stages; ++s) {
    for (size_t m = 0; m < members_.size(); ++m) {
      if (s >= members_[m].stages.size()) continue;
      steps_.push_back(Step{m, s});
      done_after_.push_back(done_after_.back());
      done_after_.back()[m] = s + 1;
    }
  }
  first_round_ = members_.size();
  for (const Member& member : members_) {
    first_bin_.push_back(bins_per_row_);
    bins_per_row_ += member.rest.features().size();
  }
}

double TopKSelector::MemberOutput(size_t m, double raw) const {
  const TopKMember& member = members_[m].spec;
  if (member.raw) return raw;
  member.model->FinishPredictions(&raw, 1, member.iterations);
  return raw;
}

double TopKSelector::Score(int32_t row) {
  const double* sums = sums_.data() + static_cast<size_t>(row) * members_.size();
  if (ensembles_.empty()) return MemberOutput(0, sums[0]);
  for (size_t m = 0; m < members_.size(); ++m) member_values_[m] = MemberOutput(m, sums[m]);
  return Combined(0, row);
}

double TopKSelector::PartValue(const TopKEnsemble::Part& part) const {
  return part.ensemble ? ensemble_values_[part.index] : member_values_[part.index];
}

double TopKSelector::WeightedPart(const TopKEnsemble::Part& part) const { return part.weight * PartValue(part); }

double TopKSelector::Combined(int widen, int32_t row) {
  const double direction = widen > 0 ? kInfinity : -kInfinity;
  for (size_t e = 0; e < ensembles_.size(); ++e) {
    const TopKEnsemble& ensemble = ensembles_[e];
    std::vector<double>& weighted = weighted_[e];
    if (ensemble.route_slot >= 0) {  // the picked part's value, as Program takes it
      for (size_t p = 0; p < ensemble.parts.size(); ++p) weighted[p] = PartValue(ensemble.parts[p]);
      if (row < 0) {
        ensemble_values_[e] = widen > 0 ? *std::max_element(weighted.begin(), weighted.end())
                                        : *std::min_element(weighted.begin(), weighted.end());
      } else {
        const int32_t pick = routes_[static_cast<size_t>(row) * static_cast<size_t>(route_slots_) +
                                     static_cast<size_t>(ensemble.route_slot)];
        ensemble_values_[e] = pick < 0 ? std::numeric_limits<double>::quiet_NaN() : weighted[static_cast<size_t>(pick)];
      }
      continue;
    }
    for (size_t p = 0; p < ensemble.parts.size(); ++p) weighted[p] = WeightedPart(ensemble.parts[p]);
    double value = CombineRow(ensemble.combine, weighted, weight_sums_[e], &median_scratch_);
    for (const treescore::Transform& transform : ensemble.transforms) {
      value = ApplyTransform(value, transform);
      if (widen == 0 || ExactlyMonotone(transform)) continue;
      for (int i = 0; i < kTransformUlps; ++i) value = std::nextafter(value, direction);
    }
    ensemble_values_[e] = value;
  }
  return ensemble_values_.back();
}

double TopKSelector::MemberBound(size_t m, double sum, size_t done, const uint16_t* bins, bool upper) const {
  const RestBounds& rest = members_[m].rest;
  // The remaining additions are at most Trees() roundings of values no larger in magnitude
  // than |sum| + Magnitude(); summing the rest bound and adding it rounds as often again.
  const double error = (2.0 * rest.Trees(done) + 4.0) * kRoundoff * (std::fabs(sum) + rest.Magnitude(done));
  const double direction = upper ? kInfinity : -kInfinity;
  double bound = MemberOutput(m, upper ? sum + rest.Upper(done, bins) + error : sum + rest.Lower(done, bins) - error);
  for (int i = 0; i < kTransformUlps; ++i) bound = std::nextafter(bound, direction);
  return bound;
}

void TopKSelector::FindNeeds(int32_t row) {
  const size_t num_members = members_.size();
  uint8_t* needs = needs_.data() + static_cast<size_t>(row) * num_members;
  std::fill(needs, needs + num_members, 0);
  active_.assign(ensembles_.size(), 0);
  active_.back() = 1;
  const auto reach = [&](const TopKEnsemble::Part& part) { (part.ensemble ? active_.data() : needs)[part.index] = 1; };
  // Parts are listed before their ensembles, so one pass from the root down reaches them all.
  for (size_t e = ensembles_.size(); e-- > 0;) {
    if (!active_[e]) continue;
    const TopKEnsemble& ensemble = ensembles_[e];
    if (ensemble.route_slot < 0) {
      for (const TopKEnsemble::Part& part : ensemble.parts) reach(part);
      continue;
    }
    const int32_t pick = routes_[static_cast<size_t>(row) * static_cast<size_t>(route_slots_) +
                                 static_cast<size_t>(ensemble.route_slot)];
    if (pick < -1 || pick >= static_cast<int32_t>(ensemble.parts.size())) {
      throw std::invalid_argument("route index " + std::to_string(pick) + " out of range");
    }
    if (pick == -1) {
      unbounded_[static_cast<size_t>(row)] = 1;
    } else {
      reach(ensemble.parts[static_cast<size_t>(pick)]);
    }
  }
}

double TopKSelector::BestKey(int32_t row, size_t step, bool binned) {
  if (!boundable_) return kInfinity;  // nothing is dropped
  if (routed_ && unbounded_[static_cast<size_t>(row)]) return kInfinity;  // its score is NaN
  const std::vector<size_t>& done = done_after_[step];
  const double* sums = sums_.data() + static_cast<size_t>(row) * members_.size();
  const uint16_t* bins = binned ? bins_.data() + static_cast<size_t>(row) * bins_per_row_ : nullptr;
  if (ensembles_.empty()) return Key(MemberBound(0, sums[0], done[0], bins, query_.descending));
  // Every floating-point step of the combination (a product by a weight of 0 or more, a sum,
  // a quotient by a positive sum, min, max, a sort) is nondecreasing in its operands, so the
  // combination of the members' bounds bounds the combination of their outputs, at every
  // level of nesting; the transforms from libm are within an ulp of nondecreasing functions,
  // hence the ulps Combined widens them by. A route's output is the picked part's, so its
  // bound is that part's. Members a row does not need get bounds that nothing reads.
  for (size_t m = 0; m < members_.size(); ++m) {
    member_values_[m] = MemberBound(m, sums[m], done[m], binned ? bins + first_bin_[m] : nullptr, query_.descending);
  }
  const double bound = Combined(query_.descending ? 1 : -1, row);
  return std::isnan(bound) ? kInfinity : Key(bound);
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

void TopKSelector::FindBins(const FeatureBatch& rows, const Candidate& candidate) {
  uint8_t& binned = binned_[static_cast<size_t>(candidate.row)];
  if (binned) return;
  binned = 1;
  uint16_t* bins = bins_.data() + static_cast<size_t>(candidate.row) * bins_per_row_;
  for (const Member& member : members_) {
    for (size_t i = 0; i < member.bin_columns.size(); ++i) *bins++ = member.rest.Bin(i, rows.At(candidate.slot, member.bin_columns[i]));
  }
}

FeatureBatch TopKSelector::MemberRows(const FeatureBatch& rows, size_t m) {
  Member& member = members_[m];
  return member.spec.columns.empty() ? rows : rows.Columns(member.spec.columns, &member.view_columns);
}

void TopKSelector::RunStage(const FeatureBatch& rows, size_t step, std::vector<Candidate>* candidates) {
  const size_t num_members = members_.size();
  const Step& at = steps_[step];
  // The candidates that need the step's member: all of them, unless routes pick other members.
  needing_.clear();
  for (size_t i = 0; i < candidates->size(); ++i) {
    if (!routed_ || needs_[static_cast<size_t>((*candidates)[i].row) * num_members + at.member]) needing_.push_back(i);
  }
  const int32_t n = static_cast<int32_t>(needing_.size());
  if (n == 0) return;
  picked_.resize(static_cast<size_t>(n));
  running_.resize(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    const Candidate& c = (*candidates)[needing_[static_cast<size_t>(i)]];
    picked_[static_cast<size_t>(i)] = c.slot;
    running_[static_cast<size_t>(i)] = sums_[static_cast<size_t>(c.row) * num_members + at.member];
  }
  // Every row of the batch in order (the first round): read straight down the columns.
  bool every_row = n == rows.num_rows;
  for (int32_t i = 0; every_row && i < n; ++i) every_row = picked_[static_cast<size_t>(i)] == i;
  const Member& member = members_[at.member];
  member.stages[at.stage].AddRaw(MemberRows(rows, at.member), every_row ? nullptr : picked_.data(), n, IterationRange{},
                                 running_.data());
  for (int32_t i = 0; i < n; ++i) {
    Candidate& c = (*candidates)[needing_[static_cast<size_t>(i)]];
    double* sums = sums_.data() + static_cast<size_t>(c.row) * num_members;
    sums[at.member] = running_[static_cast<size_t>(i)];
    // The bounds for any row first, which drop most rows as well; the rows they keep are
    // bounded again by their bins, found the first time.
    c.best = BestKey(c.row, step + 1, false);
    if (bins_per_row_ == 0 || c.best < Bar(c.group)) continue;
    FindBins(rows, c);
    c.best = BestKey(c.row, step + 1, true);
  }
  trees_evaluated_ += static_cast<int64_t>(n) * member.stage_trees[at.stage];
}

const FeatureBatch& TopKSelector::Compact(const FeatureBatch& rows, std::vector<Candidate>* candidates) {
  const size_t width = static_cast<size_t>(rows.num_cols);
  compacted_.resize(std::max<size_t>(1, candidates->size() * width));
  for (size_t i = 0; i < candidates->size(); ++i) {
    Candidate& c = (*candidates)[i];
    double* row = compacted_.data() + i * width;
    for (int32_t f : read_columns_) row[f] = rows.At(c.slot, f);  // no tree reads the others
    c.slot = static_cast<int32_t>(i);
  }
  compacted_rows_ = std::make_unique<RowMajor>(compacted_.data(), static_cast<int32_t>(candidates->size()), rows.num_cols);
  return compacted_rows_->batch();
}

void TopKSelector::Finish(const FeatureBatch& rows, std::vector<Candidate>* candidates, size_t from, int32_t* kept,
                          double* scores) {
  for (size_t step = from; step < steps_.size(); ++step) {
    candidates->erase(std::remove_if(candidates->begin(), candidates->end(),
                                     [&](const Candidate& c) { return c.best < Bar(c.group); }),
                      candidates->end());
    RunStage(rows, step, candidates);
  }
  for (const Candidate& c : *candidates) {
    const double score = Score(c.row);
    scores[c.row] = score;
    const double key = Key(score);
    kept[c.row] = (!(key < floor_) && Offer(c.group, key)) ? 1 : 0;
  }
}

void TopKSelector::SplitLeaders(const std::vector<Candidate>& candidates, std::vector<Candidate>* leaders,
                                std::vector<Candidate>* others) {
  const size_t groups = best_.size();
  // The candidates' bounds, grouped (a counting sort by group).
  std::vector<size_t> start(groups + 1, 0);
  for (const Candidate& c : candidates) ++start[static_cast<size_t>(c.group) + 1];
  for (size_t g = 0; g < groups; ++g) start[g + 1] += start[g];
  std::vector<size_t> filled(start.begin(), start.end() - 1);
  bounds_.resize(candidates.size());
  for (const Candidate& c : candidates) {
    bounds_[filled[static_cast<size_t>(c.group)]++] = std::isnan(c.best) ? kInfinity : c.best;  // NaN sorts nowhere
  }
  // Per group, the wanted-th best bound (-inf where every candidate is wanted): candidates
  // above it lead, and so do the first `ties` candidates equal to it.
  std::vector<double> threshold(groups, -kInfinity);
  std::vector<size_t> ties(groups, candidates.size());
  for (size_t g = 0; g < groups; ++g) {
    const size_t held = std::min(best_[g].size(), static_cast<size_t>(query_.k));
    const size_t wanted = static_cast<size_t>(query_.k) - held + kExtraLeaders;
    const auto first = bounds_.begin() + static_cast<std::ptrdiff_t>(start[g]);
    const auto last = bounds_.begin() + static_cast<std::ptrdiff_t>(start[g + 1]);
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

int32_t TopKSelector::Select(const FeatureBatch& rows, const int32_t* groups, double floor, int32_t* kept,
                             double* scores, const int32_t* routes) {
  const int32_t n = rows.num_rows;
  if (groups != nullptr && floor > -kInfinity) throw std::invalid_argument("a top-K floor needs one group");
  floor_ = std::isnan(floor) ? -kInfinity : floor;
  if (rows.num_cols < needed_columns_) {
    throw std::invalid_argument("rows have " + std::to_string(rows.num_cols) + " columns, the models read " +
                                std::to_string(needed_columns_));
  }
  if (routed_ && routes == nullptr && n > 0) throw std::invalid_argument("route indices missing");
  routes_ = routes;
  std::vector<Candidate> candidates(static_cast<size_t>(n));
  // Each member's running sum starts where its forest's sums start (ExactScorer::AddRaw continues them).
  sums_.resize(static_cast<size_t>(n) * members_.size());
  for (size_t i = 0; i < sums_.size(); ++i) sums_[i] = members_[i % members_.size()].spec.model->forest().base_score;
  bins_.resize(std::max<size_t>(1, static_cast<size_t>(n) * bins_per_row_));
  binned_.assign(static_cast<size_t>(n), 0);
  for (int32_t r = 0; r < n; ++r) {
    const int32_t group = groups == nullptr ? 0 : groups[r];
    if (group < 0) throw std::invalid_argument("negative top-K group " + std::to_string(group));
    if (static_cast<size_t>(group) >= best_.size()) best_.resize(static_cast<size_t>(group) + 1);
    candidates[static_cast<size_t>(r)] = Candidate{r, r, group, kInfinity};
    kept[r] = 0;
  }
  if (routed_) {  // each row's full score evaluates the trees of the members its routes pick
    needs_.resize(static_cast<size_t>(n) * members_.size());
    unbounded_.assign(static_cast<size_t>(n), 0);
    for (int32_t r = 0; r < n; ++r) {
      FindNeeds(r);
      for (size_t m = 0; m < members_.size(); ++m) {
        if (needs_[static_cast<size_t>(r) * members_.size() + m]) trees_in_full_ += members_[m].rest.Trees(0);
      }
    }
  } else {
    for (const Member& member : members_) trees_in_full_ += static_cast<int64_t>(n) * member.rest.Trees(0);
  }
  if (!boundable_) {  // no bound holds: every row scored and kept
    Finish(rows, &candidates, 0, kept, scores);
    for (int32_t r = 0; r < n; ++r) kept[r] = 1;
    return n;
  }
  // The first round (every member's first stage) over every row.
  for (size_t step = 0; step < first_round_; ++step) RunStage(rows, step, &candidates);
  candidates.erase(std::remove_if(candidates.begin(), candidates.end(), [&](const Candidate& c) { return c.best < Bar(c.group); }),
                   candidates.end());
  // Each group's most promising rows are scored to the end first: they fill its k and raise its
  // bar before the other rows are judged against it. Both sets stay in row order.
  std::vector<Candidate> leaders, others;
  SplitLeaders(candidates, &leaders, &others);
  Finish(rows, &leaders, first_round_, kept, scores);
  // The other survivors of the first stage are copied out row after row, and run their stages
  // a chunk at a time, so that a chunk's features stay in cache from stage to stage: picked out
  // of the batch each time, every value would cost a cache line.
  others.erase(std::remove_if(others.begin(), others.end(), [&](const Candidate& c) { return c.best < Bar(c.group); }),
               others.end());
  const FeatureBatch& survivors = Compact(rows, &others);
  std::vector<Candidate> chunk;
  for (size_t first = 0; first < others.size(); first += kChunkRows) {
    const size_t end = std::min(others.size(), first + kChunkRows);
    chunk.assign(others.begin() + static_cast<std::ptrdiff_t>(first), others.begin() + static_cast<std::ptrdiff_t>(end));
    Finish(survivors, &chunk, first_round_, kept, scores);
  }
  int32_t count = 0;
  for (int32_t r = 0; r < n; ++r) count += kept[r];
  return count;
}

}  // namespace engine
}  // namespace treescore
