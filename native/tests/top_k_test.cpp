// Exact top-K selection against full scoring: for several objectives, directions, output kinds,
// group counts and stage sizes, every row of each group's true top k (ties included) is kept,
// the kept rows' scores are the bits a full Predict gives, and most rows are dropped early.
#include <LightGBM/c_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "../src/engine/exact_scorer.h"
#include "../src/top_k/selector.h"
#include "../src/model/decision.h"
#include "../src/model/lightgbm_text.h"
#include "lightgbm_training.h"
#include "top_k_checks.h"

namespace treescore {
namespace engine {
namespace {

constexpr int kCols = 5;

std::vector<double> Rows(int rows, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<double> data(static_cast<size_t>(rows) * kCols);
  for (size_t i = 0; i < data.size(); ++i) {
    const unsigned pick = rng() % 20;
    data[i] = pick == 0 ? std::numeric_limits<double>::quiet_NaN() : pick == 1 ? 0.0 : pick == 2 ? -0.0 : normal(rng);
  }
  return data;
}

std::string TrainModel(const std::string& objective) {
  const int rows = 4000;
  std::vector<double> x = Rows(rows, 3);
  std::vector<float> labels(rows);
  std::mt19937 rng(9);
  for (int i = 0; i < rows; ++i) {
    const double a = std::isnan(x[i * kCols]) ? 0.5 : x[i * kCols];
    const double signal = 1.5 * a - x[i * kCols + 1] * 0.7 + std::sin(std::isnan(x[i * kCols + 2]) ? 0 : x[i * kCols + 2]);
    if (objective.find("binary") != std::string::npos) labels[i] = signal + 0.3 * (rng() % 7) > 1.0 ? 1.f : 0.f;
    else if (objective.find("poisson") != std::string::npos) labels[i] = static_cast<float>(std::floor(std::exp(0.5 * std::tanh(signal)) * (rng() % 4)));
    else labels[i] = static_cast<float>(signal);
  }
  BoosterHandle booster = test_models::Train(x, labels, kCols, "verbose=-1",
                                              objective + " num_leaves=20 verbose=-1 num_threads=1 min_data_in_leaf=5", 60);
  const std::string text = test_models::ModelText(booster);
  LGBM_BoosterFree(booster);
  return text;
}

// objective, k, descending, raw, groups, trees per stage
using Case = std::tuple<std::string, int, bool, bool, int, int>;

class TopKTest : public ::testing::TestWithParam<Case> {};

TEST_P(TopKTest, KeepsEveryRowOfEachGroupsTopKWithItsExactScore) {
  const auto [objective, k, descending, raw, num_groups, per_stage] = GetParam();
  const ExactScorer model(model::ReadLightGbmText(TrainModel(objective)), Layout::kAuto);
  TopKSelector selector(RankedScore(model, raw, IterationRange{}, per_stage), TopKQuery{k, descending});

  const int batches = 4, batch_rows = 5000, n = batches * batch_rows;
  const std::vector<double> rows = Rows(n, 17);
  std::vector<int32_t> groups(static_cast<size_t>(n));
  std::mt19937 rng(5);
  for (int32_t& g : groups) g = static_cast<int32_t>(rng() % static_cast<unsigned>(num_groups));
  const RowMajor matrix(rows.data(), n, kCols);
  const FeatureBatch& all = matrix.batch();
  std::vector<double> full(static_cast<size_t>(n));
  if (raw) model.PredictRaw(all, IterationRange{}, full.data());
  else model.Predict(all, IterationRange{}, full.data());

  std::vector<int32_t> kept(static_cast<size_t>(n));
  std::vector<double> scores(static_cast<size_t>(n));
  int64_t total_kept = 0;
  for (int b = 0; b < batches; ++b) {
    const FeatureBatch batch = all.Rows(static_cast<int64_t>(b) * batch_rows, batch_rows);
    const size_t at = static_cast<size_t>(b) * batch_rows;
    total_kept += selector.Select(batch, num_groups == 1 ? nullptr : groups.data() + at, -INFINITY, kept.data() + at,
                                  scores.data() + at);
  }
  for (int g = 0; g < num_groups; ++g) {
    std::vector<double> keys;
    for (int r = 0; r < n; ++r) {
      if (groups[static_cast<size_t>(r)] == g || num_groups == 1) keys.push_back(descending ? full[r] : -full[r]);
    }
    std::sort(keys.begin(), keys.end(), std::greater<double>());
    const double bar = keys[std::min(keys.size(), static_cast<size_t>(k)) - 1];
    for (int r = 0; r < n; ++r) {
      if (num_groups != 1 && groups[static_cast<size_t>(r)] != g) continue;
      const double key = descending ? full[r] : -full[r];
      if (key >= bar) ASSERT_EQ(1, kept[static_cast<size_t>(r)]) << "row " << r << " of group " << g << " is in its top " << k;
    }
  }
  for (int r = 0; r < n; ++r) {
    if (kept[static_cast<size_t>(r)] == 1) {
      ASSERT_EQ(0, std::memcmp(&scores[r], &full[r], sizeof(double))) << "row " << r << ": " << scores[r] << " != " << full[r];
    }
  }
  // The point of it: with one group, most rows are dropped. How many trees that saves depends on
  // how tight the leaf bounds are for the model (bench/ measures a realistic one); for these
  // regressions, most trees go unevaluated.
  std::printf("kept %lld of %d rows, evaluated %.3f of the trees in %d stages\n", static_cast<long long>(total_kept), n,
              static_cast<double>(selector.trees_evaluated()) / static_cast<double>(selector.trees_in_full()),
              selector.num_stages());
  if (num_groups == 1 && k * 10 <= batch_rows) EXPECT_LT(total_kept, n / 20);
  if (num_groups == 1 && k * 10 <= batch_rows && objective.rfind("objective=regression", 0) == 0) {
    EXPECT_LT(selector.trees_evaluated(), selector.trees_in_full() / 4);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Objectives, TopKTest,
    ::testing::Values(Case{"objective=regression", 10, true, false, 1, 0},
                      Case{"objective=regression", 10, false, false, 1, 7},
                      Case{"objective=binary", 25, true, false, 1, 3},
                      Case{"objective=binary", 25, false, true, 1, 0},
                      Case{"objective=binary", 5, true, false, 13, 10},
                      Case{"objective=poisson", 40, true, false, 3, 5},
                      Case{"objective=poisson", 1, false, false, 1, 60},
                      Case{"objective=regression boosting=rf bagging_freq=1 bagging_fraction=0.7", 10, true, false, 1, 4},
                      Case{"objective=regression", 3000, true, false, 2, 10}));

TEST(TopKSelection, KeepsEveryRowThatTiesWithTheKth) {
  const ExactScorer model(model::ReadLightGbmText(TrainModel("objective=binary")), Layout::kAuto);
  TopKSelector selector(RankedScore(model, false, IterationRange{}, 3), TopKQuery{5});
  // 40 distinct rows, then 2000 copies of one of the best: the copies tie, so all are kept.
  std::vector<double> rows = Rows(40, 23);
  std::vector<double> scores(40);
  model.Predict(RowMajor(rows.data(), 40, kCols).batch(), IterationRange{}, scores.data());
  const size_t best = static_cast<size_t>(std::max_element(scores.begin(), scores.end()) - scores.begin());
  for (int copy = 0; copy < 2000; ++copy) rows.insert(rows.end(), rows.begin() + best * kCols, rows.begin() + (best + 1) * kCols);
  const int n = static_cast<int>(rows.size() / kCols);
  std::vector<int32_t> kept(static_cast<size_t>(n));
  std::vector<double> got(static_cast<size_t>(n));
  const RowMajor matrix(rows.data(), n, kCols);
  const int32_t count = selector.Select(matrix.batch(), nullptr, -INFINITY, kept.data(), got.data());
  for (int r = 40; r < n; ++r) {
    ASSERT_EQ(1, kept[static_cast<size_t>(r)]) << "copy " << r - 40;
    ASSERT_EQ(0, std::memcmp(&got[r], &scores[best], sizeof(double)));
  }
  EXPECT_GE(count, 2000);
}

TEST(TopKSelection, DropsRowsBelowAFloorAndKeepsTheTopAboveIt) {
  const ExactScorer model(model::ReadLightGbmText(TrainModel("objective=regression")), Layout::kAuto);
  const int n = 6000;
  const std::vector<double> rows = Rows(n, 31);
  const RowMajor matrix(rows.data(), n, kCols);
  std::vector<double> full(static_cast<size_t>(n));
  model.Predict(matrix.batch(), IterationRange{}, full.data());
  std::vector<double> sorted = full;
  std::sort(sorted.begin(), sorted.end(), std::greater<double>());
  // Another partition kept rows reaching the 50th best score: a floor for this one.
  const double floor = sorted[49];
  TopKSelector selector(RankedScore(model, false, IterationRange{}, 6), TopKQuery{100});
  std::vector<int32_t> kept(static_cast<size_t>(n));
  std::vector<double> scores(static_cast<size_t>(n));
  selector.Select(matrix.batch(), nullptr, floor, kept.data(), scores.data());
  for (int r = 0; r < n; ++r) {
    if (full[r] < floor) ASSERT_EQ(0, kept[static_cast<size_t>(r)]) << "row " << r << " is below the floor";
    if (full[r] >= floor) ASSERT_EQ(1, kept[static_cast<size_t>(r)]) << "row " << r << " reaches the floor";
  }
  EXPECT_THROW(selector.Select(matrix.batch(), std::vector<int32_t>(n, 0).data(), floor, kept.data(), scores.data()),
               std::invalid_argument);
}

TEST(TopKSelection, ScoresAndKeepsEveryRowOfAModelWithANanLeaf) {
  // A NaN leaf in the first tree: no bound holds for the rows reaching it, so every row is
  // scored to the end and kept, in the second batch too, when the groups' bars are known.
  std::string text = TrainModel("objective=regression");
  const size_t leaves = text.find("leaf_value=") + std::string("leaf_value=").size();
  text.replace(leaves, text.find(' ', leaves) - leaves, "nan");
  const ExactScorer model(model::ReadLightGbmText(text), Layout::kAuto);
  TopKSelector selector(RankedScore(model, false, IterationRange{}, 3), TopKQuery{10});
  EXPECT_FALSE(selector.boundable());
  const int n = 4000;
  const std::vector<double> rows = Rows(n, 37);
  const RowMajor matrix(rows.data(), n, kCols);
  std::vector<double> full(static_cast<size_t>(n));
  model.Predict(matrix.batch(), IterationRange{}, full.data());
  test_checks::ExpectEveryRowKeptWithItsScore(&selector, matrix.batch(), full);
}

TEST(TopKSelection, RefusesKBelowOne) {
  const ExactScorer model(model::ReadLightGbmText(TrainModel("objective=regression")), Layout::kAuto);
  EXPECT_THROW(TopKSelector(RankedScore(model, false, IterationRange{}), TopKQuery{0}), std::invalid_argument);
}

}  // namespace
}  // namespace engine
}  // namespace treescore
