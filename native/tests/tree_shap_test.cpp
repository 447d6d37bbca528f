// treescore's TreeSHAP against LightGBM's, bit for bit: models with categorical features of
// hundreds of codes, every missing-value setting, several classes, random forests, deep lopsided
// trees whose deepest leaves are past a table and replay their path, one-leaf trees and repeated
// features on a path; rows with NaN, +-0, +-inf, subnormals and values one ulp either side of a
// threshold; every iteration range and thread count.
#include <LightGBM/c_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../src/booster.h"
#include "../src/engine/tree_shap.h"
#include "../src/engine_predictor.h"
#include "../src/model/lightgbm_text.h"
#include "lightgbm_training.h"

namespace treescore {
namespace {

constexpr int kCols = 6;  // column 0 categorical in the categorical models (up to 600 codes)

std::vector<double> Features(int rows, unsigned seed, bool special) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  const double values[] = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(), 0.0, -0.0, 1e-35, -1e-35, 5e-324, 1e300, -3.0};
  std::vector<double> data(static_cast<size_t>(rows) * kCols);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < kCols; ++c) {
      double& v = data[static_cast<size_t>(r) * kCols + c];
      v = c == 0 ? static_cast<double>(rng() % 600) : normal(rng);
      if (special && rng() % 5 == 0) v = values[rng() % 10];
    }
  }
  return data;
}

std::string Train(const std::string& objective, const std::string& params, int iterations) {
  const int rows = 4000;
  std::vector<double> x = Features(rows, 3, false);
  for (size_t i = 1; i < x.size(); i += 13) x[i] = std::numeric_limits<double>::quiet_NaN();
  for (size_t i = 4; i < x.size(); i += 17) x[i] = 0.0;
  std::mt19937 rng(9);
  std::vector<float> labels(rows);
  for (int i = 0; i < rows; ++i) {
    const double* row = x.data() + static_cast<size_t>(i) * kCols;
    const double signal = std::fmod(row[0], 7.0) - 3 + (std::isnan(row[1]) ? 1.0 : row[1]) - 0.5 * row[2] * row[3];
    if (objective == "binary") labels[i] = signal > 0 ? 1.f : 0.f;
    else if (objective == "multiclass") labels[i] = static_cast<float>(signal > 1 ? 2 : signal > -1 ? 1 : 0);
    else labels[i] = static_cast<float>(signal + 0.1 * static_cast<double>(rng() % 7));
  }
  const std::string dataset = "verbose=-1 categorical_feature=0 max_cat_to_onehot=4 max_bin=255 " + params;
  const std::string booster = "objective=" + objective + (objective == "multiclass" ? " num_class=3" : "") +
                              " verbose=-1 num_threads=1 min_data_in_leaf=3 cat_smooth=1 min_data_per_group=5 " + params;
  BoosterHandle handle = test_models::Train(x, labels, kCols, dataset, booster, iterations);
  const std::string text = test_models::ModelText(handle);
  LGBM_BoosterFree(handle);
  return text;
}

// Rows that also hold, for each numerical threshold of the model, the threshold itself and the
// doubles one ulp either side of it.
std::vector<double> Rows(const std::string& text, int rows, unsigned seed) {
  std::vector<double> data = Features(rows, seed, true);
  const model::Forest forest = model::ReadLightGbmText(text);
  std::mt19937 rng(seed);
  for (const model::Tree& tree : forest.trees) {
    for (const model::Node& node : tree.nodes) {
      if (node.decision.split != model::Split::kNumerical || !std::isfinite(node.threshold)) continue;
      for (double v : {node.threshold, std::nextafter(node.threshold, INFINITY), std::nextafter(node.threshold, -INFINITY)}) {
        // The last row with one other value missing or zero, and this feature at v.
        std::vector<double> row(data.end() - kCols, data.end());
        row[rng() % kCols] = (rng() % 2) ? std::numeric_limits<double>::quiet_NaN() : 0.0;
        row[static_cast<size_t>(node.feature)] = v;
        data.insert(data.end(), row.begin(), row.end());
      }
    }
  }
  return data;
}

void ExpectLightGbmBits(const std::string& text, const std::string& what,
                        size_t max_table_addends = engine::TreeShap::kMaxTableAddends) {
  const Booster lightgbm = Booster::FromModelText(text);
  const EnginePredictor ours =
      EnginePredictor::FromModelText(text, engine::Layout::kAuto, engine::BestSimd(), max_table_addends);
  const std::vector<double> rows = Rows(text, 700, 21);
  const int n = static_cast<int>(rows.size() / kCols);
  for (IterationRange range : {IterationRange{}, IterationRange{2, 5}, IterationRange{7, 0}}) {
    const int64_t per_row = lightgbm.OutputsPerRow(PredictKind::kContrib, range);
    ASSERT_EQ(ours.OutputsPerRow(PredictKind::kContrib, range), per_row) << what;
    std::vector<double> expected(static_cast<size_t>(n * per_row));
    lightgbm.Predict(rows.data(), n, kCols, PredictKind::kContrib, range, 1, expected.data(), expected.size());
    for (int threads : {1, 2}) {
      std::vector<double> got(expected.size());
      ours.Predict(rows.data(), n, kCols, PredictKind::kContrib, range, threads, got.data(), got.size());
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(0, std::memcmp(&got[i], &expected[i], sizeof(double)))
            << what << ", range " << range.start_iteration << "+" << range.num_iterations << ", row "
            << i / static_cast<size_t>(per_row) << ", column " << i % static_cast<size_t>(per_row) << ": " << got[i]
            << " != " << expected[i];
      }
    }
  }
}

TEST(TreeShapTest, EqualsLightGbmForEveryObjectiveAndMissingSetting) {
  for (const char* params : {"", "zero_as_missing=true", "use_missing=false"}) {
    ExpectLightGbmBits(Train("regression", std::string("num_leaves=31 ") + params, 20), std::string("regression ") + params);
  }
  ExpectLightGbmBits(Train("binary", "num_leaves=15", 20), "binary");
  ExpectLightGbmBits(Train("multiclass", "num_leaves=15", 10), "multiclass");
}

TEST(TreeShapTest, EqualsLightGbmForRandomForestsAndDart) {
  ExpectLightGbmBits(Train("regression", "boosting=rf bagging_fraction=0.6 bagging_freq=1 feature_fraction=0.7", 12), "rf");
  ExpectLightGbmBits(Train("binary", "boosting=dart drop_rate=0.3 num_leaves=20", 12), "dart");
  ExpectLightGbmBits(Train("regression", "data_sample_strategy=goss num_leaves=20", 12), "goss");
}

// Lopsided trees of 200 leaves, many of them deeper than a table holds, so that they replay
// their paths, which repeat features; and trees that never split (one leaf, no counts).
int DeepestLeaf(const model::Tree& tree, int32_t index, int depth) {
  if (index < 0) return depth;
  const model::Node& node = tree.nodes[static_cast<size_t>(index)];
  return std::max(DeepestLeaf(tree, node.left, depth + 1), DeepestLeaf(tree, node.right, depth + 1));
}

TEST(TreeShapTest, EqualsLightGbmForDeepTreesAndOneLeafTrees) {
  const std::string deep = Train("regression", "num_leaves=200 min_data_in_leaf=2 max_bin=1023 learning_rate=0.3", 8);
  int deepest = 0;
  for (const model::Tree& tree : model::ReadLightGbmText(deep).trees) deepest = std::max(deepest, DeepestLeaf(tree, 0, 0));
  ASSERT_GT(deepest, engine::TreeShap::kMaxTableDepth) << "no leaf replays its path";
  ExpectLightGbmBits(deep, "deep");
  ExpectLightGbmBits(Train("regression", "num_leaves=31 min_gain_to_split=1e9", 6), "one leaf");
}

// A model cache with little room keeps fewer tables: the leaves without one replay, same bits.
TEST(TreeShapTest, EqualsLightGbmWhateverTheTablesMayKeep) {
  const std::string text = Train("binary", "num_leaves=31", 20);
  const model::Forest forest = model::ReadLightGbmText(text);
  const engine::TreeShap::TableStats unbounded = engine::TreeShap(forest).Stats();
  const int64_t full = unbounded.table_addends;
  ASSERT_GT(full, 2);
  for (const auto most : {size_t{0}, size_t{1}, static_cast<size_t>(full / 3), static_cast<size_t>(full)}) {
    const engine::TreeShap::TableStats stats = engine::TreeShap(forest, most).Stats();
    EXPECT_LE(stats.table_addends, static_cast<int64_t>(most));
    EXPECT_EQ(stats.replayed_leaves > unbounded.replayed_leaves, most < static_cast<size_t>(full)) << most;
    ExpectLightGbmBits(text, "tables of at most " + std::to_string(most) + " addends", most);
  }
}

// Rows that share a deep leaf's pattern share its addends through a memo within a bound. One that
// starts again at every pass, or whose table fills and keeps addends it cannot find again, must
// give the same bits as one that keeps the whole block's, on deep trees with categorical splits.
TEST(TreeShapTest, GivesTheSameBitsWhereverTheMemoStartsAgain) {
  const model::Forest forest = model::ReadLightGbmText(
      Train("regression", "num_leaves=200 min_data_in_leaf=2 max_bin=1023 learning_rate=0.3", 4));
  const engine::TreeShap shap(forest);
  ASSERT_GT(shap.Stats().replayed_leaves, 0) << "no leaf replays its path";
  int64_t categorical_splits = 0;
  for (const model::Tree& tree : forest.trees) {
    for (const model::Node& node : tree.nodes) categorical_splits += node.decision.split == model::Split::kCategorical;
  }
  ASSERT_GT(categorical_splits, 0) << "the deep trees split column 0 (600 codes) by value only";
  const std::vector<double> rows = Features(500, 8, true);
  const int n = 500;
  // Feature by feature, as Explain reads them, each row twice so that every pattern repeats.
  std::vector<double> values(static_cast<size_t>(2 * n) * kCols);
  for (int r = 0; r < 2 * n; ++r) {
    for (int f = 0; f < kCols; ++f) values[static_cast<size_t>(f) * 2 * n + r] = rows[static_cast<size_t>(r % n) * kCols + f];
  }
  const size_t outputs = static_cast<size_t>(2 * n * shap.OutputsPerRow());
  std::vector<double> kept(outputs);
  std::vector<double> restarted(outputs);
  engine::TreeShap::Scratch whole;
  shap.Explain(values.data(), 2 * n, 0, forest.trees.size(), &whole, kept.data());
  for (const size_t room : {size_t{0}, size_t{48} << 10}) {
    engine::TreeShap::Scratch bounded;
    bounded.memo = engine::AddendMemo(room);
    shap.Explain(values.data(), 2 * n, 0, forest.trees.size(), &bounded, restarted.data());
    ASSERT_EQ(0, std::memcmp(kept.data(), restarted.data(), outputs * sizeof(double))) << room;
  }
  // A row and its copy, computed apart or from the memo, agree too.
  const auto per_row = static_cast<size_t>(shap.OutputsPerRow());
  ASSERT_EQ(0, std::memcmp(kept.data(), kept.data() + n * per_row, n * per_row * sizeof(double)));
}

}  // namespace
}  // namespace treescore
