// Tests of ensemble programs against hand-computed combinations of single-model predictions.
#include <LightGBM/c_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "../src/booster.h"
#include "../src/engine_predictor.h"
#include "../src/memory/account.h"
#include "../src/memory/working_memory.h"
#include "../src/program/program_decoder.h"
#include "lightgbm_training.h"

namespace treescore {
namespace {

constexpr int kCols = 3;
const GridPoints kNoGrid;

std::string TrainModel(unsigned seed, const char* objective) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  const int rows = 1000;
  std::vector<double> x(rows * kCols);
  std::vector<float> y(rows);
  for (double& v : x) v = normal(rng);
  for (int i = 0; i < rows; ++i) y[i] = static_cast<float>(x[i * kCols] + 0.5 * x[i * kCols + 1] > 0);
  BoosterHandle booster = test_models::Train(x, y, kCols, "verbose=-1",
                                             std::string("objective=") + objective + " num_leaves=5 verbose=-1 num_threads=1", 10);
  std::string text = test_models::ModelText(booster);
  LGBM_BoosterFree(booster);
  return text;
}

class Programs : public ::testing::Test {
 protected:
  void SetUp() override {
    text_a_ = TrainModel(1, "regression");
    text_b_ = TrainModel(2, "binary");
    a_ = std::make_shared<Booster>(Booster::FromModelText(text_a_));
    b_ = std::make_shared<Booster>(Booster::FromModelText(text_b_));
    std::mt19937 rng(3);
    std::normal_distribution<double> normal;
    input_.resize(kRows * kCols);
    for (double& v : input_) v = normal(rng);
    input_rows_.emplace(input_.data(), kRows, kCols);
  }

  // The input as the program reads it: a row-major batch of kRows rows.
  const FeatureBatch& Input() const { return input_rows_->batch(); }

  std::vector<double> Single(const Booster& booster) const {
    std::vector<double> out(kRows);
    booster.Predict(input_.data(), kRows, kCols, PredictKind::kPrediction, {}, 1, out.data(), kRows);
    return out;
  }

  static constexpr int kRows = 200;
  std::string text_a_, text_b_;
  std::shared_ptr<Booster> a_, b_;
  std::vector<double> input_;
  std::optional<RowMajor> input_rows_;
};

TEST_F(Programs, WeightedMeanWithTransformsMatchesTheDocumentedOrder) {
  // node 0: model a, node 1: model b, node 2: mean(0.7 a, 0.3 b) then expm1 then clip(0, 1)
  const std::vector<int64_t> code = {kCols, 0, 3,                   // inputs, route slots, nodes
                                     0, 0, 0, 3, 0, 1, 2,           // model slot 0, prediction, columns 0 1 2
                                     0, 1, 0, 3, 0, 1, 2,           // model slot 1
                                     1, 0, 2, 0, 1, 2, 2, 4};       // mean of nodes 0 1; expm1, clip
  const std::vector<double> constants = {0.7, 0.3, 0, 0, 0, 1};
  Program program = DecodeProgram(code, constants, {a_, b_});
  std::vector<double> out(kRows);
  program.Evaluate(Input(), kRows, nullptr, 1, kNoGrid, 0, 1, out.data());
  const auto pa = Single(*a_), pb = Single(*b_);
  for (int i = 0; i < kRows; ++i) {
    const double combined = (0.7 * pa[i] + 0.3 * pb[i]) / (0.7 + 0.3);
    EXPECT_EQ(out[i], std::min(std::max(std::expm1(combined), 0.0), 1.0)) << i;
  }
}

// One model's TreeSHAP values for the input rows: kCols + 1 per row.
std::vector<double> Shap(const Booster& booster, const std::vector<double>& rows, int num_rows) {
  std::vector<double> out(static_cast<size_t>(num_rows) * (kCols + 1));
  booster.Predict(rows.data(), num_rows, kCols, PredictKind::kContrib, {}, 1, out.data(),
                  static_cast<int64_t>(out.size()));
  return out;
}

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST_F(Programs, ContributionsOfAWeightedMeanAreTheMembersWeightedMeanInMemberOrder) {
  // model a reads inputs 0 1 2; model b reads input 2 for both of its first two features, then 1:
  // its contributions land on inputs 2 (features 0 and 1 added in feature order) and 1; input 0
  // gets 0 from it. node 2: mean(0.7 a, 0.3 b) with a sigmoid, which contributions leave out.
  const std::vector<int64_t> code = {kCols, 0, 3, 0, 0, 1, 3, 0, 1, 2, 0, 1, 1, 3, 2, 2, 1, 1, 0, 2, 0, 1, 1, 3};
  Program program = DecodeProgram(code, {0.7, 0.3, 0, 0}, {a_, b_});
  std::vector<double> out(kRows * (kCols + 1));
  program.EvaluateContributions(Input(), kRows, nullptr, 1, kNoGrid, out.data());
  std::vector<double> b_rows(input_.size());
  for (int i = 0; i < kRows; ++i) {
    const double* row = input_.data() + i * kCols;
    b_rows[i * kCols] = row[2], b_rows[i * kCols + 1] = row[2], b_rows[i * kCols + 2] = row[1];
  }
  const auto sa = Shap(*a_, input_, kRows), sb = Shap(*b_, b_rows, kRows);
  for (int i = 0; i < kRows; ++i) {
    const double* ca = sa.data() + i * (kCols + 1);
    const double* cb = sb.data() + i * (kCols + 1);
    const double b_on_input[kCols + 1] = {0.0, cb[2], cb[0] + cb[1], cb[3]};
    for (int f = 0; f <= kCols; ++f) {
      const double expected = (0.7 * ca[f] + 0.3 * b_on_input[f]) / (0.7 + 0.3);
      EXPECT_TRUE(SameBits(out[i * (kCols + 1) + f], expected)) << i << " " << f;
    }
  }
}

TEST_F(Programs, ContributionsOfRoutesAndCascadesComeFromTheScorerThatAnswered) {
  // node 0: model b, node 1: model a, node 2: cascade(b, a) accepting below 0.2 or above 0.8,
  // node 3: route slot 0 -> [cascade, a].
  const std::vector<int64_t> code = {kCols, 1, 4, 0, 1, 1, 3, 0, 1, 2, 0, 0, 0, 3, 0, 1, 2, 3, 0, 1, 2, 0, 2, 2, 1};
  Program program = DecodeProgram(code, {0.2, 0.8}, {a_, b_});
  std::vector<int32_t> route(kRows);
  for (int i = 0; i < kRows; ++i) route[i] = i % 3 == 2 ? -1 : i % 3;
  std::vector<double> out(kRows * (kCols + 1));
  const auto stats = program.EvaluateContributions(Input(), kRows, route.data(), 1, kNoGrid, out.data());
  const auto sa = Shap(*a_, input_, kRows), sb = Shap(*b_, input_, kRows);
  std::vector<double> raw_b(kRows);
  b_->Predict(input_.data(), kRows, kCols, PredictKind::kRaw, {}, 1, raw_b.data(), kRows);
  int64_t escalated = 0;
  for (int i = 0; i < kRows; ++i) {
    // The cascade's first stage is b raw, so its thresholds apply to the raw score here.
    const bool confident = raw_b[i] < 0.2 || raw_b[i] > 0.8;
    if (route[i] == 0) escalated += !confident;
    const double* expected = route[i] == 0 && confident ? sb.data() + i * (kCols + 1) : sa.data() + i * (kCols + 1);
    for (int f = 0; f <= kCols; ++f) {
      const double got = out[i * (kCols + 1) + f];
      if (route[i] < 0) EXPECT_TRUE(std::isnan(got)) << i;
      else EXPECT_TRUE(SameBits(got, expected[f])) << i << " " << f;
    }
  }
  EXPECT_EQ(stats.escalated, escalated);
  EXPECT_GT(escalated, 0);
  EXPECT_LT(escalated, kRows / 3);
}

TEST_F(Programs, ContributionsOfGridPointsAreEachPointScoredAlone) {
  // model a over a grid varying input 1 at 3 points: each point's contributions are a's on that
  // point's row.
  const std::vector<int64_t> code = {kCols, 0, 1, 0, 0, 1, 3, 0, 1, 2};
  Program program = DecodeProgram(code, {}, {a_});
  const int base = 20, points = 3;
  std::vector<double> values(base * points);
  for (int k = 0; k < base * points; ++k) values[k] = -1.0 + 0.5 * (k % points);
  GridPoints grid;
  grid.points = points;
  grid.varying = {1};
  grid.values = values.data();
  std::vector<double> out(base * points * (kCols + 1));
  program.EvaluateContributions(Input(), base * points, nullptr, 1, grid, out.data());
  std::vector<double> rows(base * points * kCols);
  for (int k = 0; k < base * points; ++k) {
    for (int f = 0; f < kCols; ++f) rows[k * kCols + f] = input_[(k / points) * kCols + f];
    rows[k * kCols + 1] = values[k];
  }
  const auto expected = Shap(*a_, rows, base * points);
  for (size_t i = 0; i < out.size(); ++i) EXPECT_TRUE(SameBits(out[i], expected[i])) << i;
}

TEST_F(Programs, ContributionsOfAMaxEnsembleAreRefused) {
  const std::vector<int64_t> code = {kCols, 0, 3, 0, 0, 1, 3, 0, 1, 2, 0, 1, 1, 3, 0, 1, 2, 1, 3, 2, 0, 1, 0};
  Program program = DecodeProgram(code, {1, 1}, {a_, b_});
  std::vector<double> out(kRows * (kCols + 1));
  EXPECT_THROW(program.EvaluateContributions(Input(), kRows, nullptr, 1, kNoGrid, out.data()), std::invalid_argument);
}

TEST_F(Programs, RoutesGroupRowsAndUnroutedRowsAreNaN) {
  // node 0: model a, node 1: model b, node 2: route slot 0 -> [a, b]
  const std::vector<int64_t> code = {kCols, 1, 3, 0, 0, 0, 3, 0, 1, 2, 0, 1, 0, 3, 0, 1, 2, 2, 0, 2, 0, 1};
  Program program = DecodeProgram(code, {}, {a_, b_});
  std::vector<int32_t> route(kRows);
  for (int i = 0; i < kRows; ++i) route[i] = i % 3 == 2 ? -1 : i % 3;
  std::vector<double> out(kRows);
  program.Evaluate(Input(), kRows, route.data(), 1, kNoGrid, 0, 1, out.data());
  const auto pa = Single(*a_), pb = Single(*b_);
  for (int i = 0; i < kRows; ++i) {
    if (route[i] < 0) EXPECT_TRUE(std::isnan(out[i]));
    else EXPECT_EQ(out[i], route[i] == 0 ? pa[i] : pb[i]);
  }
}

TEST_F(Programs, CascadesEscalateOnlyUnconfidentRows) {
  // node 0: model b (first), node 1: model a (full), node 2: cascade accept below 0.2 or above 0.8
  const std::vector<int64_t> code = {kCols, 0, 3, 0, 1, 0, 3, 0, 1, 2, 0, 0, 0, 3, 0, 1, 2, 3, 0, 1};
  Program program = DecodeProgram(code, {0.2, 0.8}, {a_, b_});
  std::vector<double> out(kRows);
  const auto stats = program.Evaluate(Input(), kRows, nullptr, 1, kNoGrid, 0, 1, out.data());
  const auto pa = Single(*a_), pb = Single(*b_);
  int64_t escalated = 0;
  for (int i = 0; i < kRows; ++i) {
    const bool confident = pb[i] < 0.2 || pb[i] > 0.8;
    escalated += !confident;
    EXPECT_EQ(out[i], confident ? pb[i] : pa[i]);
  }
  EXPECT_EQ(stats.escalated, escalated);
  EXPECT_GT(escalated, 0);
}

// A grid of 2 x 5 points over inputs 0 and 2: base rows are the first kRows / 10 input rows,
// and each point's row is its base row with the point's values in place.
class ProgramGrids : public Programs {
 protected:
  void SetUp() override {
    Programs::SetUp();
    std::mt19937 rng(5);
    std::normal_distribution<double> normal;
    values_.resize(kRows * 2);
    for (double& v : values_) v = normal(rng);
    for (int e = 0; e < kRows; ++e) {
      for (int j = 0; j < kCols; ++j) points_.push_back(input_[(e / kPoints) * kCols + j]);
      points_[e * kCols + 0] = values_[e * 2];
      points_[e * kCols + 2] = values_[e * 2 + 1];
    }
    point_rows_.emplace(points_.data(), kRows, kCols);
  }
  GridPoints Grid() const { return GridPoints{kPoints, {0, 2}, values_.data()}; }

  // node 0: a, node 1: b, node 2: mean(0.7 a, 0.3 b), node 3: cascade(b, else a), node 4: route slot 0 -> [2, 3]
  const std::vector<int64_t> kNested = {kCols, 1, 5,
                                        0, 0, 0, 3, 0, 1, 2,
                                        0, 1, 0, 3, 0, 1, 2,
                                        1, 0, 2, 0, 1, 0,
                                        3, 1, 0,
                                        2, 0, 2, 2, 3};
  const std::vector<double> kNestedConstants = {0.7, 0.3, 0.2, 0.8};

  static constexpr int kPoints = 10;
  std::vector<double> values_;  // per point: input 0, input 2
  std::vector<double> points_;  // every point as a row of its own
  std::optional<RowMajor> point_rows_;
};

TEST_F(ProgramGrids, MonotoneCurvesTakeRunningMaximaAlongEachRun) {
  const std::vector<int64_t> code = {kCols, 0, 1, 0, 0, 0, 3, 0, 1, 2};
  Program program = DecodeProgram(code, {}, {a_});
  std::vector<double> out(kRows), scores(kRows);
  program.Evaluate(Input(), kRows, nullptr, 1, Grid(), 1, 5, out.data());
  a_->Predict(points_.data(), kRows, kCols, PredictKind::kPrediction, {}, 1, scores.data(), kRows);
  for (int run = 0; run < kRows / 5; ++run) {
    double running = -std::numeric_limits<double>::infinity();
    for (int k = 0; k < 5; ++k) {
      running = std::max(running, scores[run * 5 + k]);
      EXPECT_EQ(out[run * 5 + k], running);
    }
  }
  EXPECT_THROW(program.Evaluate(Input(), kRows, nullptr, 1, Grid(), 1, 3, out.data()), std::invalid_argument);
  EXPECT_THROW(program.Evaluate(Input(), kRows, nullptr, 1, GridPoints{kPoints, {0, 3}, values_.data()}, 0, 1,
                                out.data()), std::invalid_argument);
}

// Ensembles, routes and cascades inside a grid, on both engines: whole grids are shared, a
// cascade's escalated points are scored alone, and every point has the bits of its own row.
TEST_F(ProgramGrids, EveryPointHasTheBitsOfItsOwnRow) {
  const auto engine_a = std::make_shared<EnginePredictor>(EnginePredictor::FromModelText(text_a_));
  const auto engine_b = std::make_shared<EnginePredictor>(EnginePredictor::FromModelText(text_b_));
  std::vector<int32_t> route(kRows);
  for (int e = 0; e < kRows; ++e) route[e] = (e / kPoints) % 3 == 2 ? -1 : (e / kPoints) % 3;
  for (const auto& models : {std::vector<std::shared_ptr<const Predictor>>{a_, b_},
                             std::vector<std::shared_ptr<const Predictor>>{engine_a, engine_b}}) {
    const Program program = DecodeProgram(kNested, kNestedConstants, models);
    std::vector<double> expected(kRows), got(kRows);
    const auto alone = program.Evaluate(point_rows_->batch(), kRows, route.data(), 1, kNoGrid, 0, 1, expected.data());
    const auto shared = program.Evaluate(Input(), kRows, route.data(), 2, Grid(), 0, 1, got.data());
    ASSERT_EQ(0, std::memcmp(got.data(), expected.data(), kRows * sizeof(double)));
    EXPECT_EQ(shared.escalated, alone.escalated);
    EXPECT_GT(shared.escalated, 0);
  }
}

TEST_F(Programs, EngineMembersGiveTheBitsOfLightGbmMembers) {
  // The weighted-mean program of the first test, its models loaded into treescore's engine.
  const std::vector<int64_t> code = {kCols, 0, 3, 0, 0, 0, 3, 0, 1, 2, 0, 1, 0, 3, 0, 1, 2, 1, 0, 2, 0, 1, 0};
  const std::vector<double> constants = {0.7, 0.3};
  const auto engine_a = std::make_shared<EnginePredictor>(EnginePredictor::FromModelText(text_a_));
  const auto engine_b = std::make_shared<EnginePredictor>(EnginePredictor::FromModelText(text_b_));
  std::vector<double> expected(kRows), got(kRows);
  DecodeProgram(code, constants, {a_, b_}).Evaluate(Input(), kRows, nullptr, 1, kNoGrid, 0, 1, expected.data());
  DecodeProgram(code, constants, {engine_a, engine_b}).Evaluate(Input(), kRows, nullptr, 2, kNoGrid, 0, 1, got.data());
  ASSERT_EQ(0, std::memcmp(got.data(), expected.data(), kRows * sizeof(double)));
}

// The JVM hands programs feature-major batches, columns in place: the same bits as row-major
// input, for whole batches (read in place), routes (gathered) and grids (base rows in place).
TEST_F(ProgramGrids, FeatureMajorInputGivesTheBitsOfRowMajorInput) {
  std::vector<std::vector<double>> columns(kCols, std::vector<double>(kRows));  // each column its own vector
  for (int r = 0; r < kRows; ++r) {
    for (int j = 0; j < kCols; ++j) columns[j][r] = input_[r * kCols + j];
  }
  std::vector<const double*> pointers;
  for (const auto& column : columns) pointers.push_back(column.data());
  const FeatureBatch feature_major{pointers.data(), 1, 0, kRows, kCols};
  std::vector<int32_t> route(kRows);
  for (int e = 0; e < kRows; ++e) route[e] = e % 3 == 2 ? -1 : e % 3;
  const auto engine_a = std::make_shared<EnginePredictor>(EnginePredictor::FromModelText(text_a_));
  const auto engine_b = std::make_shared<EnginePredictor>(EnginePredictor::FromModelText(text_b_));
  for (const auto& models : {std::vector<std::shared_ptr<const Predictor>>{a_, b_},
                             std::vector<std::shared_ptr<const Predictor>>{engine_a, engine_b}}) {
    const Program program = DecodeProgram(kNested, kNestedConstants, models);
    for (const GridPoints& grid : {kNoGrid, Grid()}) {
      std::vector<double> expected(kRows), got(kRows);
      program.Evaluate(Input(), kRows, route.data(), 1, grid, 0, 1, expected.data());
      program.Evaluate(feature_major, kRows, route.data(), 2, grid, 0, 1, got.data());
      ASSERT_EQ(0, std::memcmp(got.data(), expected.data(), kRows * sizeof(double))) << grid.points << " points";
    }
  }
  std::vector<double> out(kRows);
  const FeatureBatch too_few{pointers.data(), 1, 0, kRows - 1, kCols};
  const Program program = DecodeProgram(kNested, kNestedConstants, {a_, b_});
  EXPECT_THROW(program.Evaluate(too_few, kRows, route.data(), 1, kNoGrid, 0, 1, out.data()), std::invalid_argument);
}

TEST(ProgramDecoding, MalformedProgramsAreRejected) {
  EXPECT_THROW(DecodeProgram({}, {}, {}), std::invalid_argument);
  EXPECT_THROW(DecodeProgram({3, 0, 1, 1, 0, 1, 0, 0}, {1.0}, {}), std::invalid_argument);  // member not earlier
  EXPECT_THROW(DecodeProgram({3, 0, 1, 0, 0, 0, 3, 0, 1, 2}, {}, {}), std::invalid_argument);  // no such model
  EXPECT_THROW(DecodeProgram({3, 0, 1, 9}, {}, {}), std::invalid_argument);  // unknown node type
}

// Batches larger than one part (PartRows: about a MiB of a model's rows): a route's groups, a
// cascade's escalated rows and every model's contributions are scored a part at a time, on both
// engines, with the bits of each row scored alone; grids split only between whole grids.
TEST(ProgramParts, BatchesOfManyPartsGiveTheBitsOfEachRowScoredAlone) {
  constexpr int kBig = 150000, kPoints = 10;
  const std::string text_a = TrainModel(1, "regression"), text_b = TrainModel(2, "binary");
  std::mt19937 rng(7);
  std::normal_distribution<double> normal;
  std::vector<double> input(static_cast<size_t>(kBig) * kCols);
  for (double& v : input) v = normal(rng);
  const RowMajor rows(input.data(), kBig, kCols);
  std::vector<int32_t> route(kBig);
  for (int i = 0; i < kBig; ++i) route[i] = i % 3 == 2 ? -1 : i % 3;
  // node 0: model b (raw), node 1: model a, node 2: cascade(b, a) accepting below 0.2 or above
  // 0.8, node 3: route slot 0 -> [cascade, a].
  const std::vector<int64_t> code = {kCols, 1, 4, 0, 1, 1, 3, 0, 1, 2, 0, 0, 0, 3, 0, 1, 2, 3, 0, 1, 2, 0, 2, 2, 1};
  const auto lightgbm_a = std::make_shared<Booster>(Booster::FromModelText(text_a));
  const auto lightgbm_b = std::make_shared<Booster>(Booster::FromModelText(text_b));
  const auto engine_a = std::make_shared<EnginePredictor>(EnginePredictor::FromModelText(text_a));
  const auto engine_b = std::make_shared<EnginePredictor>(EnginePredictor::FromModelText(text_b));

  std::vector<double> pa(kBig), raw_b(kBig);
  lightgbm_a->Predict(input.data(), kBig, kCols, PredictKind::kPrediction, {}, 1, pa.data(), kBig);
  lightgbm_b->Predict(input.data(), kBig, kCols, PredictKind::kRaw, {}, 1, raw_b.data(), kBig);
  const auto sa = Shap(*lightgbm_a, input, kBig), sb = Shap(*lightgbm_b, input, kBig);

  for (const auto& models : {std::vector<std::shared_ptr<const Predictor>>{lightgbm_a, lightgbm_b},
                             std::vector<std::shared_ptr<const Predictor>>{engine_a, engine_b}}) {
    const Program program = DecodeProgram(code, {0.2, 0.8}, models);
    std::vector<double> out(kBig);
    const auto stats = program.Evaluate(rows.batch(), kBig, route.data(), 1, kNoGrid, 0, 1, out.data());
    int64_t escalated = 0;
    for (int i = 0; i < kBig; ++i) {
      const bool confident = raw_b[i] < 0.2 || raw_b[i] > 0.8;
      if (route[i] == 0) escalated += !confident;
      if (route[i] < 0) ASSERT_TRUE(std::isnan(out[i])) << i;
      else ASSERT_TRUE(SameBits(out[i], route[i] == 0 && confident ? raw_b[i] : pa[i])) << i;
    }
    EXPECT_EQ(stats.escalated, escalated);
    EXPECT_GT(escalated, 0);

    std::vector<double> shap(static_cast<size_t>(kBig) * (kCols + 1));
    program.EvaluateContributions(rows.batch(), kBig, route.data(), 1, kNoGrid, shap.data());
    for (int i = 0; i < kBig; ++i) {
      const bool confident = raw_b[i] < 0.2 || raw_b[i] > 0.8;
      const double* expected = (route[i] == 0 && confident ? sb.data() : sa.data()) + i * (kCols + 1);
      for (int f = 0; f <= kCols; ++f) {
        const double got = shap[static_cast<size_t>(i) * (kCols + 1) + f];
        if (route[i] < 0) ASSERT_TRUE(std::isnan(got)) << i;
        else ASSERT_TRUE(SameBits(got, expected[f])) << i << " " << f;
      }
    }

    // A grid of kPoints points varying input 1 over the first kBig / kPoints rows, each point
    // routed as its base row: the same bits as every point's row scored alone.
    std::vector<double> values(kBig), points(static_cast<size_t>(kBig) * kCols);
    for (double& v : values) v = normal(rng);
    std::vector<int32_t> point_route(kBig);
    for (int e = 0; e < kBig; ++e) {
      for (int j = 0; j < kCols; ++j) points[static_cast<size_t>(e) * kCols + j] = input[(e / kPoints) * kCols + j];
      points[static_cast<size_t>(e) * kCols + 1] = values[e];
      point_route[e] = route[e / kPoints];
    }
    std::vector<double> alone(kBig), shared(kBig);
    program.Evaluate(RowMajor(points.data(), kBig, kCols).batch(), kBig, point_route.data(), 1, kNoGrid, 0, 1,
                     alone.data());
    program.Evaluate(rows.batch(), kBig, point_route.data(), 1, GridPoints{kPoints, {1}, values.data()}, 0, 1,
                     shared.data());
    ASSERT_EQ(0, std::memcmp(shared.data(), alone.data(), sizeof(double) * kBig));
  }
}

// A cascade's escalated points within a grid are copied as rows a copy's worth at a time, not a
// whole grid at least: a grid of many points over a wide model stays within the copy share and
// the engine's scratch, on both engines, with the bits of every point's row scored alone.
TEST(ProgramParts, EscalatedGridPointsAreCopiedACopysWorthAtATime) {
  constexpr int kWide = 2000, kTrainRows = 300, kPoints = 1000;
  std::mt19937 rng(11);
  std::normal_distribution<double> normal;
  std::vector<double> train(static_cast<size_t>(kTrainRows) * kWide);
  for (double& v : train) v = normal(rng);
  std::vector<float> positive(kTrainRows), level(kTrainRows);
  for (int i = 0; i < kTrainRows; ++i) {
    const double* row = train.data() + static_cast<size_t>(i) * kWide;
    positive[i] = static_cast<float>(row[0] > 0);
    level[i] = static_cast<float>(row[0] + 0.5 * row[1]);
  }
  const auto text_of = [&](const std::vector<float>& labels, const std::string& objective) {
    BoosterHandle booster = test_models::Train(train, labels, kWide, "verbose=-1",
                                               "objective=" + objective + " num_leaves=4 min_data_in_leaf=5 verbose=-1 num_threads=1", 5);
    std::string text = test_models::ModelText(booster);
    LGBM_BoosterFree(booster);
    return text;
  };
  const std::string text_a = text_of(level, "regression"), text_b = text_of(positive, "binary");

  // One base row; the grid varies input 0, which decides b, from -3 to 3.
  const std::vector<double> base(train.begin(), train.begin() + kWide);
  std::vector<double> values(kPoints), points(static_cast<size_t>(kPoints) * kWide);
  for (int k = 0; k < kPoints; ++k) {
    values[k] = -3.0 + 6.0 * k / (kPoints - 1);
    std::copy(base.begin(), base.end(), points.begin() + static_cast<std::ptrdiff_t>(k) * kWide);
    points[static_cast<size_t>(k) * kWide] = values[k];
  }
  // node 0: model b (raw), node 1: model a, node 2: cascade(b, a) keeping b's answer only where
  // its raw score is its highest over the points: the other points, not a whole grid, escalate.
  std::vector<int64_t> code = {kWide, 0, 3};
  const auto model_node = [&](int64_t slot, int64_t kind) {
    code.insert(code.end(), {0, slot, kind, kWide});
    for (int64_t j = 0; j < kWide; ++j) code.push_back(j);
  };
  model_node(1, 1);  // b, raw
  model_node(0, 0);  // a
  code.insert(code.end(), {3, 0, 1});
  const auto lightgbm_b = std::make_shared<Booster>(Booster::FromModelText(text_b));
  std::vector<double> raw_b(kPoints);
  lightgbm_b->Predict(points.data(), kPoints, kWide, PredictKind::kRaw, {}, 1, raw_b.data(), kPoints);
  const double highest = *std::max_element(raw_b.begin(), raw_b.end());
  double above = -std::numeric_limits<double>::infinity();  // the next lower raw score
  for (const double r : raw_b) above = r < highest ? std::max(above, r) : above;
  const auto escalated = std::count_if(raw_b.begin(), raw_b.end(), [&](double r) { return r <= above; });
  ASSERT_GT(escalated, RowsPerCopy(kWide)) << "the escalated points fit one copy: the test shows nothing";
  ASSERT_LT(escalated, kPoints) << "every point escalates: a whole grid";

  const std::vector<std::shared_ptr<const Predictor>> lightgbm = {
      std::make_shared<Booster>(Booster::FromModelText(text_a)), lightgbm_b};
  const std::vector<std::shared_ptr<const Predictor>> engine = {
      std::make_shared<EnginePredictor>(EnginePredictor::FromModelText(text_a)),
      std::make_shared<EnginePredictor>(EnginePredictor::FromModelText(text_b))};
  for (const auto& models : {lightgbm, engine}) {
    const Program program = DecodeProgram(code, {-std::numeric_limits<double>::infinity(), above}, models);
    std::vector<double> alone(kPoints), shared(kPoints);
    program.Evaluate(RowMajor(points.data(), kPoints, kWide).batch(), kPoints, nullptr, 1, kNoGrid, 0, 1, alone.data());
    const RowMajor base_row(base.data(), 1, kWide);
    memory::TakeThreadPeak();
    const int64_t before = memory::Read().total();
    const auto stats = program.Evaluate(base_row.batch(), kPoints, nullptr, 1, GridPoints{kPoints, {0}, values.data()},
                                        0, 1, shared.data());
    const int64_t peak = memory::TakeThreadPeak() - before;
    EXPECT_EQ(stats.escalated, escalated);
    // The point buffers of the cascade (its first stage's outputs, the split's rows and
    // positions) count toward batch.maxBytes: a few doubles per point.
    EXPECT_LE(peak, memory::CopyBytes(kWide) + memory::kScratchBytes + int64_t{kPoints} * 8 * 8);
    ASSERT_EQ(0, std::memcmp(shared.data(), alone.data(), sizeof(double) * kPoints));
  }
}

// Consecutive whole grids are read in place, and each point copies only the values the model
// reads of the grid's varying inputs: a copy's worth of points at a time, not the batch's, on both
// engines, with the bits of every point's row scored alone.
TEST(ProgramParts, WholeGridsCopyTheirVaryingValuesACopysWorthAtATime) {
  constexpr int kWide = 64, kVarying = 48, kBase = 500, kPoints = 50, kAll = kBase * kPoints;
  std::mt19937 rng(13);
  std::normal_distribution<double> normal;
  std::vector<double> train(static_cast<size_t>(kBase) * kWide);
  for (double& v : train) v = normal(rng);
  std::vector<float> level(kBase);
  for (int i = 0; i < kBase; ++i) level[i] = static_cast<float>(train[static_cast<size_t>(i) * kWide] - train[static_cast<size_t>(i) * kWide + 47]);
  BoosterHandle trained = test_models::Train(train, level, kWide, "verbose=-1",
                                             "objective=regression num_leaves=8 min_data_in_leaf=5 verbose=-1 num_threads=1", 10);
  const std::string text = test_models::ModelText(trained);
  LGBM_BoosterFree(trained);

  // The grid varies inputs 0..kVarying-1 of every base row (the training rows).
  GridPoints grid{kPoints, {}, nullptr};
  for (int v = 0; v < kVarying; ++v) grid.varying.push_back(v);
  std::vector<double> values(static_cast<size_t>(kAll) * kVarying), points(static_cast<size_t>(kAll) * kWide);
  for (double& v : values) v = normal(rng);
  grid.values = values.data();
  for (int e = 0; e < kAll; ++e) {
    double* row = points.data() + static_cast<size_t>(e) * kWide;
    std::copy_n(train.begin() + static_cast<std::ptrdiff_t>(e / kPoints) * kWide, kWide, row);
    std::copy_n(values.begin() + static_cast<std::ptrdiff_t>(e) * kVarying, kVarying, row);
  }
  ASSERT_GT(int64_t{kAll} * kVarying * 8, 4 * memory::kCopyBytes) << "the batch's varying values fit one copy: the test shows nothing";

  std::vector<int64_t> code = {kWide, 0, 1, 0, 0, 0, kWide};
  for (int64_t j = 0; j < kWide; ++j) code.push_back(j);
  for (const std::shared_ptr<const Predictor>& model :
       {std::shared_ptr<const Predictor>(std::make_shared<Booster>(Booster::FromModelText(text))),
        std::shared_ptr<const Predictor>(std::make_shared<EnginePredictor>(EnginePredictor::FromModelText(text)))}) {
    const Program program = DecodeProgram(code, {}, {model});
    std::vector<double> alone(kAll), shared(kAll);
    program.Evaluate(RowMajor(points.data(), kAll, kWide).batch(), kAll, nullptr, 1, kNoGrid, 0, 1, alone.data());
    const RowMajor base_rows(train.data(), kBase, kWide);
    memory::TakeThreadPeak();
    const int64_t before = memory::Read().total();
    program.Evaluate(base_rows.batch(), kAll, nullptr, 1, grid, 0, 1, shared.data());
    const int64_t peak = memory::TakeThreadPeak() - before;
    // The program's copy of varying values and LightGBM's copy of point rows, each a copy's worth,
    // the engine's scratch, and the program's per-point buffers (batch.maxBytes counts those).
    EXPECT_LE(peak, 2 * memory::kCopyBytes + memory::kScratchBytes + int64_t{kAll} * 8 * 8);
    ASSERT_EQ(0, std::memcmp(shared.data(), alone.data(), sizeof(double) * kAll));
  }
}

}  // namespace
}  // namespace treescore
