// The format-neutral forest (model/forest.h): the node decision for both comparisons and every
// missing policy, what the LightGBM loader states about a trained model, and the engine's
// layouts on a forest no LightGBM text can express (strict comparisons, a base score).
#include <LightGBM/c_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "../src/engine/exact_scorer.h"
#include "../src/model/decision.h"
#include "../src/model/lightgbm_text.h"
#include "lightgbm_training.h"

namespace treescore {
namespace model {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<double> ValuesAround(double t) {
  std::vector<double> values = {t, kInf, -kInf, kNaN, 0.0, -0.0, 1.0, -1.0, 1e300, -1e300,
                                std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::max()};
  if (std::isfinite(t)) {
    for (double v : {std::nextafter(t, kInf), std::nextafter(t, -kInf)}) values.push_back(v);
  }
  return values;
}

TEST(Decision, InclusiveThresholdKeepsEachComparisonForEveryValue) {
  for (double t : {1.0, -1.0, 0.0, -0.0, 1e-300, kInf, -kInf, std::numeric_limits<double>::max(),
                   -std::numeric_limits<double>::max(), std::numeric_limits<double>::denorm_min()}) {
    for (Comparison comparison : {Comparison::kLeftIfLessOrEqual, Comparison::kLeftIfLess}) {
      Node node;
      node.threshold = t;
      node.decision.comparison = comparison;
      node.decision.missing = Missing::kNaN;
      for (double v : ValuesAround(t)) {
        if (v != v) continue;
        const bool expected = comparison == Comparison::kLeftIfLess ? v < t : v <= t;
        EXPECT_EQ(NumericalGoesLeft(node.decision, InclusiveThreshold(node), v), expected) << v << " against " << t;
      }
    }
  }
}

TEST(Decision, MissingValuesGoTheDefaultWayAndOthersCompareAsZero) {
  for (bool default_left : {false, true}) {
    for (double t : {-1.0, 1.0}) {  // 0.0 goes right of -1 and left of 1
      Decision decision;
      decision.default_left = default_left;
      decision.missing = Missing::kNone;  // NaN is compared as 0.0; nothing is missing
      EXPECT_EQ(NumericalGoesLeft(decision, t, kNaN), 0.0 <= t);
      EXPECT_EQ(NumericalGoesLeft(decision, t, 0.0), 0.0 <= t);
      decision.missing = Missing::kZero;  // zero and NaN take the default way
      EXPECT_EQ(NumericalGoesLeft(decision, t, kNaN), default_left);
      EXPECT_EQ(NumericalGoesLeft(decision, t, 0.0), default_left);
      EXPECT_EQ(NumericalGoesLeft(decision, t, 0.5), 0.5 <= t);
      decision.missing = Missing::kNaN;  // NaN takes the default way; zero is compared
      EXPECT_EQ(NumericalGoesLeft(decision, t, kNaN), default_left);
      EXPECT_EQ(NumericalGoesLeft(decision, t, 0.0), 0.0 <= t);
    }
  }
}

TEST(Decision, CategoriesNameTheirBitAndEverythingElseGoesRight) {
  const std::vector<uint32_t> words = {0b1010u, 1u};  // categories 1, 3 and 32
  for (double v : {1.0, 3.0, 32.0, 1.9, 32.5}) EXPECT_TRUE(CategoricalGoesLeft(words.data(), 2, v)) << v;
  for (double v : {0.0, 2.0, 33.0, 64.0, -0.5 * 0.0, -1.0, -0.99 - 1.0, kNaN, kInf, -kInf, 3e9, 2147483648.0}) {
    EXPECT_FALSE(CategoricalGoesLeft(words.data(), 2, v)) << v;
  }
  EXPECT_TRUE(CategoricalGoesLeft(std::vector<uint32_t>{1u}.data(), 1, -0.99));  // truncates to category 0
}

TEST(Decision, LightGbmReadsTinyValuesAsPositiveZero) {
  const double zero = kLightGbmZeroThreshold;
  for (double v : {0.0, -0.0, zero, -zero, 1e-36, -1e-36, std::numeric_limits<double>::denorm_min()}) {
    const double read = AsLightGbmReadsIt(v);
    EXPECT_EQ(read, 0.0);
    EXPECT_FALSE(std::signbit(read)) << v;
  }
  for (double v : {std::nextafter(zero, kInf), -std::nextafter(zero, kInf), 1.0, kInf, -kInf}) EXPECT_EQ(AsLightGbmReadsIt(v), v);
  EXPECT_TRUE(std::isnan(AsLightGbmReadsIt(kNaN)));
}

std::string TrainModel(const std::string& params, int rows) {
  std::mt19937 rng(5);
  std::normal_distribution<double> normal;
  std::vector<double> x(static_cast<size_t>(rows) * 3);
  std::vector<float> labels(static_cast<size_t>(rows));
  for (int r = 0; r < rows; ++r) {
    double* row = x.data() + static_cast<size_t>(r) * 3;
    for (int c = 0; c < 3; ++c) row[c] = normal(rng);
    if (r % 5 == 0) row[0] = kNaN;
    if (r % 3 == 0) row[1] = 0.0;
    row[2] = static_cast<double>(rng() % 40);
    labels[static_cast<size_t>(r)] = static_cast<float>((std::isnan(row[0]) ? 1.0 : row[0]) - row[1] + (row[2] > 20 ? 1 : 0));
  }
  BoosterHandle booster = test_models::Train(x, labels, 3, "verbose=-1 categorical_feature=2 " + params,
                                              "objective=regression num_leaves=12 verbose=-1 num_threads=1 " + params, 8);
  const std::string text = test_models::ModelText(booster);
  LGBM_BoosterFree(booster);
  return text;
}

TEST(LightGbmText, StatesEachNodesTestCoversAndTheFeaturesRead) {
  const int rows = 2000;
  for (const std::string params : {"", "zero_as_missing=true", "use_missing=false"}) {
    SCOPED_TRACE(params);
    const Forest forest = ReadLightGbmText(TrainModel(params, rows));
    ASSERT_TRUE(forest.has_covers);
    EXPECT_EQ(forest.base_score, 0.0);
    EXPECT_EQ(forest.transform, OutputTransform::kIdentity);
    std::set<int> features;
    std::set<Missing> missing;
    bool categorical = false;
    for (const Tree& tree : forest.trees) {
      ASSERT_FALSE(tree.nodes.empty());
      EXPECT_EQ(tree.nodes[0].cover, rows);  // the root saw every training row
      double leaves = 0;
      for (double c : tree.leaf_cover) leaves += c;
      EXPECT_EQ(leaves, rows);
      for (const Node& node : tree.nodes) {
        features.insert(node.feature);
        EXPECT_EQ(node.decision.comparison, Comparison::kLeftIfLessOrEqual);
        if (node.decision.split == Split::kCategorical) {
          categorical = true;
          EXPECT_EQ(node.feature, 2);
          EXPECT_LE(node.first_category_word + node.num_category_words, tree.category_words.size());
        } else {
          missing.insert(node.decision.missing);
        }
      }
    }
    EXPECT_TRUE(categorical);
    EXPECT_EQ(std::vector<int>(features.begin(), features.end()), forest.features_read);
    const Missing expected = params == "zero_as_missing=true" ? Missing::kZero
                             : params == "use_missing=false" ? Missing::kNone
                                                             : Missing::kNaN;
    EXPECT_EQ(missing.count(expected), 1u);
  }
}

TEST(LightGbmText, RefusesAMissingTypeLightGbmDoesNotDefine) {
  std::string text = TrainModel("", 500);
  const auto at = text.find("decision_type=");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, std::string("decision_type=").size() + 1, "decision_type=12");
  EXPECT_THROW(ReadLightGbmText(text), std::invalid_argument);
}

TEST(LightGbmText, ReadsLinearLeavesTermByTermAndRefusesBadOnes) {
  const std::string text = TrainModel("linear_tree=true", 1000);
  const Forest forest = ReadLightGbmText(text);
  ASSERT_TRUE(forest.has_linear_trees());
  std::set<int> read;
  size_t terms = 0;
  for (const Tree& tree : forest.trees) {
    ASSERT_TRUE(tree.is_linear());
    ASSERT_EQ(tree.linear.constant.size(), tree.leaf_value.size());
    ASSERT_EQ(tree.linear.first_term.size(), tree.leaf_value.size() + 1);
    ASSERT_EQ(tree.linear.feature.size(), tree.linear.first_term.back());
    ASSERT_EQ(tree.linear.coefficient.size(), tree.linear.feature.size());
    terms += tree.linear.feature.size();
    tree.ForEachFeatureRead([&](int f) { read.insert(f); });
  }
  EXPECT_GT(terms, 0u);
  EXPECT_EQ(std::vector<int>(read.begin(), read.end()), forest.features_read);

  // The text with the first line of the first tree whose leaves read features that starts with
  // `key=` made `key=value`.
  size_t reading = text.find("leaf_features=");
  while (reading != std::string::npos && text.find_first_not_of(' ', reading + 14) == text.find('\n', reading)) {
    reading = text.find("leaf_features=", reading + 14);
  }
  ASSERT_NE(reading, std::string::npos) << "no tree's leaves read a feature";
  const size_t tree = text.rfind("Tree=", reading);
  const auto with = [&](const std::string& key, const std::string& value) {
    std::string changed = text;
    const auto at = changed.find("\n" + key + "=", tree) + 1;
    return changed.replace(at, changed.find('\n', at) - at, key + "=" + value);
  };
  const auto refusal = [](const std::string& model) {
    try {
      ReadLightGbmText(model);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no refusal");
  };
  const std::string features = text.substr(reading + 14, text.find('\n', reading) - reading - 14);
  std::string outside = features;
  const size_t first = features.find_first_not_of(' ');
  outside.replace(first, features.find(' ', first) - first, "3");
  EXPECT_NE(refusal(with("leaf_features", outside)).find("reading feature 3, outside the model"), std::string::npos);
  EXPECT_NE(refusal(with("leaf_features", "7")).find("values in leaf_features"), std::string::npos);
  EXPECT_NE(refusal(with("leaf_const", "1")).find("values in leaf_const"), std::string::npos);
}

// A forest of one tree on feature 0 with a strict test and a base score: what another format's
// loader gives. Every layout must send each value where the decision says, and start at the base.
TEST(EngineOnAnyForest, StrictComparisonsAndBaseScoreInEveryLayout) {
  for (double t : {1.0, 0.0, -kInf, kInf}) {
    for (Missing policy : {Missing::kNone, Missing::kNaN}) {
      Forest forest;
      forest.num_features = 1;
      forest.base_score = 0.25;
      forest.features_read = {0};
      Tree tree;
      Node node;
      node.threshold = t;
      node.decision.comparison = Comparison::kLeftIfLess;
      node.decision.missing = policy;
      node.decision.default_left = true;
      node.left = ~0;
      node.right = ~1;
      tree.nodes = {node};
      tree.leaf_value = {10.0, 20.0};
      forest.trees = {tree};
      const std::vector<double> values = ValuesAround(t);
      const RowMajor rows(values.data(), static_cast<int32_t>(values.size()), 1);
      for (engine::Layout layout : {engine::Layout::kNodeWalk, engine::Layout::kQuickScorer}) {
        if (layout == engine::Layout::kQuickScorer && !engine::QuickScorer::Fits(forest)) continue;
        const engine::ExactScorer scorer(forest, layout);
        std::vector<double> out(values.size());
        scorer.PredictRaw(rows.batch(), IterationRange{}, out.data());
        for (size_t i = 0; i < values.size(); ++i) {
          const double read = ReadInput(forest.input_reading, values[i]);
          const double expected = 0.25 + (GoesLeft(tree, node, read) ? 10.0 : 20.0);
          EXPECT_EQ(out[i], expected) << "value " << values[i] << " threshold " << t << " in " << scorer.layout_name();
        }
      }
    }
  }
}

}  // namespace
}  // namespace model
}  // namespace treescore
