#include "engine_predictor.h"

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <thread>
#include <vector>

#include "memory/account.h"
#include "model/lightgbm_text.h"

namespace treescore {

EnginePredictor EnginePredictor::FromModelText(const std::string& model_text, engine::Layout layout, engine::Simd simd,
                                               size_t max_table_addends) {
  return EnginePredictor(engine::ExactScorer(model::ReadLightGbmText(model_text), layout, simd, max_table_addends));
}

int64_t EnginePredictor::OutputsPerRow(PredictKind kind, IterationRange range) const {
  switch (kind) {
    case PredictKind::kPrediction:
    case PredictKind::kRaw:
      return scorer_.RawOutputsPerRow();
    case PredictKind::kLeaf:
      return scorer_.LeafOutputsPerRow(range);
    case PredictKind::kContrib:
      return scorer_.ContribOutputsPerRow();
  }
  throw std::invalid_argument("unknown prediction kind");
}

namespace {

// Iteration ranges kept as slices per model, at most: a query's options name one or two. Past
// them a range is scored by the whole model's scorer, with the same bits, only slower.
constexpr size_t kMaxSlices = 4;

}  // namespace

std::shared_ptr<const engine::ExactScorer> EnginePredictor::ScorerFor(IterationRange* iterations) const {
  // Aliasing, not owning: the whole model's scorer lives as long as the predictor.
  const std::shared_ptr<const engine::ExactScorer> whole(std::shared_ptr<const engine::ExactScorer>(), &scorer_);
  int first = 0, count = 0;
  scorer_.Range(*iterations, &first, &count);
  if (count == 0 || scorer_.IsWhole(*iterations)) return whole;
  std::lock_guard<std::mutex> lock(slices_->mutex);
  const std::pair<int, int> key(first, count);
  for (const auto& [range, slice] : slices_->built) {
    if (range == key) {
      *iterations = IterationRange{};
      return slice;
    }
  }
  if (slices_->built.size() >= kMaxSlices) return whole;
  memory::Charge charge(memory::Kind::kModels);  // the slice stays with the model
  auto slice = std::make_shared<const engine::ExactScorer>(scorer_.Slice(*iterations));
  slices_->built.emplace_back(key, slice);
  slices_->bytes += charge.net_bytes();
  *iterations = IterationRange{};
  return slice;
}

int64_t EnginePredictor::built_bytes() const {
  int64_t bytes = scorer_.built_bytes();
  std::lock_guard<std::mutex> lock(slices_->mutex);
  bytes += slices_->bytes;
  for (const auto& built : slices_->built) bytes += built.second->built_bytes();
  return bytes;
}

void EnginePredictor::PredictPart(const engine::ExactScorer& scorer, const FeatureBatch& rows, PredictKind kind,
                                  IterationRange iterations, double* out) {
  switch (kind) {
    case PredictKind::kPrediction: scorer.Predict(rows, iterations, out); return;
    case PredictKind::kRaw: scorer.PredictRaw(rows, iterations, out); return;
    case PredictKind::kLeaf: scorer.PredictLeaf(rows, iterations, out); return;
    case PredictKind::kContrib: scorer.PredictContrib(rows, iterations, out); return;
  }
  throw std::invalid_argument("unknown prediction kind");
}

namespace {

// Runs score_part(first, count) over num_rows rows split into at most num_threads parts of whole
// blocks, so the SIMD layouts see full blocks wherever they can. The calling thread takes the
// first part; helpers are joined on every path, and the first failure is rethrown after.
template <typename ScorePart>
void RunInParts(int64_t num_rows, int num_threads, ScorePart score_part) {
  constexpr int64_t kBlock = engine::kBlockRows;
  const int64_t blocks = (num_rows + kBlock - 1) / kBlock;
  const int64_t parts = std::min<int64_t>(num_threads, blocks);
  if (parts <= 1) {
    score_part(0, num_rows);
    return;
  }
  const int64_t rows_per_part = (blocks + parts - 1) / parts * kBlock;
  std::vector<std::exception_ptr> failures(static_cast<size_t>(parts));
  std::vector<std::thread> helpers;
  const auto run_part = [&](int64_t part) {
    const int64_t first = part * rows_per_part;
    const int64_t count = std::min<int64_t>(rows_per_part, num_rows - first);
    if (count <= 0) return;
    try {
      score_part(first, count);
    } catch (...) {
      failures[static_cast<size_t>(part)] = std::current_exception();
    }
  };
  try {
    for (int64_t part = 1; part < parts; ++part) helpers.emplace_back(run_part, part);
  } catch (...) {  // no thread to be had: join the ones started before the error leaves
    for (std::thread& helper : helpers) helper.join();
    throw;
  }
  run_part(0);
  for (std::thread& helper : helpers) helper.join();
  for (const std::exception_ptr& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
}

}  // namespace

void EnginePredictor::Predict(const FeatureBatch& rows, PredictKind kind, IterationRange range, int num_threads,
                              double* out, int64_t out_capacity) const {
  CheckPredictArguments(*this, rows, kind, range, num_threads, out_capacity);
  if (rows.num_rows == 0) return;
  IterationRange iterations = range;
  const int64_t per_row = OutputsPerRow(kind, range);
  const std::shared_ptr<const engine::ExactScorer> scorer = ScorerFor(&iterations);
  RunInParts(rows.num_rows, num_threads, [&](int64_t first, int64_t count) {
    PredictPart(*scorer, rows.Rows(first, static_cast<int32_t>(count)), kind, iterations, out + first * per_row);
  });
}

void EnginePredictor::PredictGrid(const FeatureBatch& base_rows, const GridPoints& grid, PredictKind kind,
                                  IterationRange range, int num_threads, double* out, int64_t out_capacity) const {
  if (kind != PredictKind::kPrediction && kind != PredictKind::kRaw) {
    Predictor::PredictGrid(base_rows, grid, kind, range, num_threads, out, out_capacity);
    return;
  }
  CheckGridArguments(*this, base_rows, grid, kind, range, num_threads, out_capacity);
  if (base_rows.num_rows == 0) return;
  IterationRange iterations = range;
  const int64_t per_base_row = static_cast<int64_t>(grid.points) * OutputsPerRow(kind, range);
  const std::shared_ptr<const engine::ExactScorer> scorer = ScorerFor(&iterations);
  const size_t values_per_base_row = static_cast<size_t>(grid.points) * grid.varying.size();
  RunInParts(base_rows.num_rows, num_threads, [&](int64_t first, int64_t count) {
    GridPoints part = grid;
    part.values = grid.values == nullptr ? nullptr : grid.values + static_cast<size_t>(first) * values_per_base_row;
    double* part_out = out + first * per_base_row;
    const FeatureBatch rows = base_rows.Rows(first, static_cast<int32_t>(count));
    if (kind == PredictKind::kRaw) {
      scorer->PredictGridRaw(rows, part, iterations, part_out);
    } else {
      scorer->PredictGrid(rows, part, iterations, part_out);
    }
  });
}

}  // namespace treescore
