// treescore's exact engine against LightGBM's own C API, in C++: models trained here with several
// missing-value settings, scored on rows full of special values, compared bit for bit with
// LGBM_BoosterPredictForMat, in both layouts. (tests/test_engine_fuzz.py fuzzes far more shapes.)
#include <LightGBM/c_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../src/engine/exact_scorer.h"
#include "../src/lightgbm_error.h"
#include "lightgbm_training.h"

namespace treescore {
namespace engine {
namespace {

constexpr int kCols = 4;

std::vector<double> Rows(int rows, unsigned seed, bool special) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  const double values[] = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(), 0.0, -0.0, 1e-35, -1e-35,
                           static_cast<double>(1e-35f), 5e-324, 1e300};
  std::vector<double> data(static_cast<size_t>(rows) * kCols);
  for (size_t i = 0; i < data.size(); ++i) {
    data[i] = (special && rng() % 4 == 0) ? values[rng() % 10] : normal(rng);
  }
  return data;
}

std::string Train(const std::string& params) {
  const int rows = 3000;
  std::vector<double> x = Rows(rows, 11, false);
  for (size_t i = 0; i < x.size(); i += 7) x[i] = std::numeric_limits<double>::quiet_NaN();
  for (size_t i = 3; i < x.size(); i += 11) x[i] = 0.0;
  std::vector<float> labels(rows);
  for (int i = 0; i < rows; ++i) labels[i] = static_cast<float>(std::isnan(x[i * kCols]) ? 1.0 : x[i * kCols] * 2 - x[i * kCols + 1]);
  BoosterHandle booster = test_models::Train(x, labels, kCols, "verbose=-1 " + params,
                                              "objective=regression num_leaves=15 verbose=-1 num_threads=1 " + params, 15);
  const std::string text = test_models::ModelText(booster);
  LGBM_BoosterFree(booster);
  return text;
}

std::vector<double> LightGbmPredict(const std::string& text, const std::vector<double>& rows) {
  BoosterHandle booster = nullptr;
  int iterations = 0;
  CheckLightGbm(LGBM_BoosterLoadModelFromString(text.c_str(), &iterations, &booster), "load");
  const int n = static_cast<int>(rows.size() / kCols);
  std::vector<double> out(static_cast<size_t>(n));
  int64_t written = 0;
  CheckLightGbm(LGBM_BoosterPredictForMat(booster, rows.data(), C_API_DTYPE_FLOAT64, n, kCols, 1, C_API_PREDICT_NORMAL,
                                          0, -1, "num_threads=1", &written, out.data()), "predict");
  LGBM_BoosterFree(booster);
  return out;
}

class EngineTest : public ::testing::TestWithParam<std::string> {};

TEST_P(EngineTest, EqualsLightGbmBitForBitInBothLayouts) {
  const std::string text = Train(GetParam());
  const std::vector<double> rows = Rows(5000, 5, true);
  const std::vector<double> expected = LightGbmPredict(text, rows);
  for (Layout layout : {Layout::kNodeWalk, Layout::kQuickScorer}) {
    const ExactScorer scorer(Forest::Parse(text), layout);
    std::vector<double> got(expected.size());
    scorer.Predict(rows.data(), static_cast<int64_t>(expected.size()), kCols, Iterations{}, got.data());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(0, std::memcmp(&got[i], &expected[i], sizeof(double)))
          << scorer.layout_name() << " row " << i << ": " << got[i] << " != " << expected[i];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(MissingValueSettings, EngineTest,
                         ::testing::Values("", "zero_as_missing=true", "use_missing=false"));

}  // namespace
}  // namespace engine
}  // namespace treescore
