// The rest bounds conditioned on a row's bins, on the values that trip a bound up: each
// threshold and the doubles either side of it, +-0, LightGBM's zero threshold and its
// neighbours, subnormals, +-inf and NaN, under every way LightGBM handles missing values and
// with a categorical feature of hundreds of codes. Two checks: the bounds hold every row's
// remaining leaves at every stage boundary, and a selector whose bar is a row's own exact
// score keeps that row (so no bound, with its rounding allowance, falls below a true score).
#include <LightGBM/c_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../src/engine/exact_scorer.h"
#include "../src/engine/rest_bounds.h"
#include "../src/top_k/selector.h"
#include "../src/model/decision.h"
#include "../src/model/lightgbm_text.h"
#include "lightgbm_training.h"

namespace treescore {
namespace engine {
namespace {

constexpr int kCols = 6;
constexpr int kCategory = 5;  // a categorical column of 300 codes
constexpr double kInf = std::numeric_limits<double>::infinity();

// Training rows: NaN in column 0, many exact zeros in column 1, plain values elsewhere.
std::vector<double> TrainingRows(int rows, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<double> x(static_cast<size_t>(rows) * kCols);
  for (int r = 0; r < rows; ++r) {
    double* row = x.data() + static_cast<size_t>(r) * kCols;
    for (int c = 0; c < kCols; ++c) row[c] = normal(rng);
    if (rng() % 8 == 0) row[0] = std::numeric_limits<double>::quiet_NaN();
    if (rng() % 3 == 0) row[1] = 0.0;
    row[kCategory] = static_cast<double>(rng() % 300);
  }
  return x;
}

std::string TrainModel(const std::string& params) {
  const int rows = 5000;
  const std::vector<double> x = TrainingRows(rows, 11);
  std::vector<float> labels(rows);
  for (int r = 0; r < rows; ++r) {
    const double* row = x.data() + static_cast<size_t>(r) * kCols;
    const double a = std::isnan(row[0]) ? 1.0 : row[0];
    const double signal = 2 * a - row[1] + std::sin(3 * row[2]) + row[3] * row[4] + (static_cast<int>(row[kCategory]) % 7) * 0.3;
    labels[static_cast<size_t>(r)] = params.find("binary") != std::string::npos ? (signal > 0.5 ? 1.f : 0.f) : static_cast<float>(signal);
  }
  BoosterHandle booster = test_models::Train(x, labels, kCols, "verbose=-1 categorical_feature=5 " + params,
                                              params + " num_leaves=31 min_data_in_leaf=5 verbose=-1 num_threads=1", 60);
  const std::string text = test_models::ModelText(booster);
  LGBM_BoosterFree(booster);
  return text;
}

// Rows whose every value is, half the time, a threshold of the model on its feature or a
// double next to one, or a special value.
std::vector<double> HostileRows(const model::Forest& forest, int rows, unsigned seed) {
  std::vector<std::vector<double>> pool(kCols);
  const double zero = model::kLightGbmZeroThreshold;
  for (auto& values : pool) {
    values = {0.0, -0.0, zero, -zero, std::nextafter(zero, kInf), std::nextafter(-zero, -kInf), std::nextafter(zero, 0.0),
              std::numeric_limits<double>::denorm_min(), -std::numeric_limits<double>::denorm_min(), kInf, -kInf,
              std::numeric_limits<double>::quiet_NaN(), 1e300, -1e300};
  }
  for (const model::Tree& tree : forest.trees) {
    for (const model::Node& node : tree.nodes) {
      if (node.decision.split == model::Split::kCategorical) continue;
      const double t = node.threshold;
      for (double v : {t, std::nextafter(t, kInf), std::nextafter(t, -kInf)}) pool[static_cast<size_t>(node.feature)].push_back(v);
    }
  }
  std::mt19937 rng(seed);
  std::vector<double> x = TrainingRows(rows, seed);
  for (size_t i = 0; i < x.size(); ++i) {
    const auto& values = pool[i % kCols];
    if (i % kCols != kCategory && rng() % 2 == 0) x[i] = values[rng() % values.size()];
  }
  return x;
}

const char* const kModels[] = {"objective=regression", "objective=regression zero_as_missing=true",
                               "objective=regression use_missing=false", "objective=binary"};

TEST(RestBounds, HoldEveryRowsRemainingLeavesAndTightenTheirBound) {
  for (const char* params : kModels) {
    SCOPED_TRACE(params);
    const model::Forest forest = model::ReadLightGbmText(TrainModel(params));
    std::vector<const model::Tree*> trees;
    for (const model::Tree& tree : forest.trees) trees.push_back(&tree);
    // A stage per tree, so that the bounds at consecutive boundaries differ by one tree's reach:
    // a sum over all trees would hide one tree's wrong reach behind the others' slack.
    const std::vector<int> stage_trees(trees.size(), 1);
    const RestBounds rest(forest.input_reading, trees, stage_trees);
    ASSERT_GT(rest.features().size(), 0u);
    // Each tree's leaf for each row, from a forest of that tree alone.
    const int n = 3000;
    const std::vector<double> x = HostileRows(forest, n, 23);
    const RowMajor matrix(x.data(), n, kCols);
    std::vector<std::vector<double>> leaf(trees.size(), std::vector<double>(n, 0.0));
    for (size_t t = 0; t < trees.size(); ++t) {
      ExactScorer(forest.Slice(t, 1), Layout::kAuto).AddRaw(matrix.batch(), nullptr, n, IterationRange{}, leaf[t].data());
    }
    double plain = 0, binned = 0;
    for (int r = 0; r < n; ++r) {
      std::vector<uint16_t> bins;
      for (size_t i = 0; i < rest.features().size(); ++i) bins.push_back(rest.Bin(i, x[static_cast<size_t>(r) * kCols + rest.features()[i]]));
      for (size_t t = 0; t < trees.size(); ++t) {
        const double slack = 1e-9 * (rest.Magnitude(0) + 1);  // the sums' rounding
        const double high = rest.Upper(t, bins.data()) - rest.Upper(t + 1, bins.data());
        const double low = rest.Lower(t, bins.data()) - rest.Lower(t + 1, bins.data());
        ASSERT_GE(high + slack, leaf[t][r]) << "row " << r << " tree " << t;
        ASSERT_LE(low - slack, leaf[t][r]) << "row " << r << " tree " << t;
      }
      plain += rest.Upper(2, nullptr) - rest.Lower(2, nullptr);
      binned += rest.Upper(2, bins.data()) - rest.Lower(2, bins.data());
    }
    EXPECT_LT(binned, 0.9 * plain) << "the bins should narrow the bound";
  }
}

TEST(RestBounds, NeverDropARowAtABarOfItsOwnScore) {
  for (const char* params : kModels) {
    SCOPED_TRACE(params);
    const ExactScorer model(model::ReadLightGbmText(TrainModel(params)), Layout::kAuto);
    const int n = 1500;
    const std::vector<double> x = HostileRows(model.forest(), n, 29);
    const RowMajor matrix(x.data(), n, kCols);
    for (bool raw : {true, false}) {
      std::vector<double> full(static_cast<size_t>(n));
      if (raw) model.PredictRaw(matrix.batch(), IterationRange{}, full.data());
      else model.Predict(matrix.batch(), IterationRange{}, full.data());
      for (bool descending : {true, false}) {
        // k larger than every batch: the bar is the floor alone, the row's own key.
        TopKSelector selector(RankedScore(model, raw, IterationRange{}, 4), TopKQuery{1 << 30, descending});
        for (int r = 0; r < n; ++r) {
          int32_t kept = 0;
          double score = 0;
          const double key = descending ? full[r] : -full[r];
          selector.Select(matrix.batch().Rows(r, 1), nullptr, std::isnan(key) ? -kInf : key, &kept, &score);
          ASSERT_EQ(1, kept) << "row " << r << (raw ? " raw" : " prediction") << (descending ? " descending" : " ascending");
          ASSERT_EQ(0, std::memcmp(&score, &full[r], sizeof(double))) << "row " << r;
        }
      }
    }
  }
}

}  // namespace
}  // namespace engine
}  // namespace treescore
