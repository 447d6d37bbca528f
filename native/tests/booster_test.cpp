// Tests of the scorer core and the JNI handle registry, against LightGBM's own C API.
#include <LightGBM/c_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../jni/handle_registry.h"
#include "../src/booster.h"
#include "../src/lightgbm_error.h"
#include "lightgbm_training.h"

namespace treescore {
namespace {

constexpr int kRows = 2000;
constexpr int kCols = 5;

std::vector<double> RandomMatrix(int rows, int cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<double> data(static_cast<size_t>(rows) * cols);
  for (double& v : data) v = normal(rng);
  return data;
}

// Trains a small model with LightGBM itself, so the test needs no files.
class TrainedModel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    features_ = RandomMatrix(kRows, kCols, 7);
    std::vector<float> labels(kRows);
    for (int i = 0; i < kRows; ++i) {
      labels[i] = static_cast<float>(features_[i * kCols] * 2 - features_[i * kCols + 1] > 0);
    }
    trained_ = test_models::Train(features_, labels, kCols, "verbose=-1",
                                  "objective=binary num_leaves=7 verbose=-1 num_threads=1", 20);
    model_text_ = test_models::ModelText(trained_);
  }

  static void TearDownTestSuite() { LGBM_BoosterFree(trained_); }

  static std::vector<double> ReferencePredict(const std::vector<double>& rows, int kind) {
    const int rows_count = static_cast<int>(rows.size() / kCols);
    int64_t per_row = 0;
    CheckLightGbm(LGBM_BoosterCalcNumPredict(trained_, 1, kind, 0, -1, &per_row), "calc");
    std::vector<double> out(rows_count * per_row);
    int64_t written = 0;
    CheckLightGbm(LGBM_BoosterPredictForMat(trained_, rows.data(), C_API_DTYPE_FLOAT64, rows_count, kCols, 1, kind, 0,
                                            -1, "num_threads=1", &written, out.data()),
                  "reference predict");
    return out;
  }

  static std::vector<double> features_;
  static BoosterHandle trained_;
  static std::string model_text_;
};

std::vector<double> TrainedModel::features_;
BoosterHandle TrainedModel::trained_ = nullptr;
std::string TrainedModel::model_text_;

bool BitwiseEqual(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

TEST_F(TrainedModel, ReportsShape) {
  Booster booster = Booster::FromModelText(model_text_);
  EXPECT_EQ(booster.num_features(), kCols);
  EXPECT_EQ(booster.num_classes(), 1);
  EXPECT_EQ(booster.OutputsPerRow(PredictKind::kPrediction, {}), 1);
  EXPECT_EQ(booster.OutputsPerRow(PredictKind::kContrib, {}), kCols + 1);
  EXPECT_EQ(booster.OutputsPerRow(PredictKind::kLeaf, {}), 20);
  EXPECT_EQ(booster.OutputsPerRow(PredictKind::kLeaf, {5, 3}), 3);
}

TEST_F(TrainedModel, EveryKindMatchesLightGbmBitForBit) {
  std::vector<double> rows = RandomMatrix(500, kCols, 11);
  rows[0] = std::numeric_limits<double>::quiet_NaN();
  rows[1] = std::numeric_limits<double>::infinity();
  rows[2] = -0.0;
  rows[3] = 1e-36;
  Booster booster = Booster::FromModelText(model_text_);
  for (PredictKind kind : {PredictKind::kPrediction, PredictKind::kRaw, PredictKind::kLeaf, PredictKind::kContrib}) {
    std::vector<double> expected = ReferencePredict(rows, static_cast<int>(kind));
    std::vector<double> actual(expected.size());
    booster.Predict(rows.data(), 500, kCols, kind, {}, 1, actual.data(), static_cast<int64_t>(actual.size()));
    EXPECT_TRUE(BitwiseEqual(actual, expected)) << "kind " << static_cast<int>(kind);
  }
}

TEST_F(TrainedModel, ConcurrentCallersWithOneRangeAgreeWithASingleThread) {
  Booster booster = Booster::FromModelText(model_text_);
  std::vector<double> rows = RandomMatrix(3000, kCols, 3);
  std::vector<double> expected(3000);
  booster.Predict(rows.data(), 3000, kCols, PredictKind::kPrediction, {}, 1, expected.data(), 3000);
  std::vector<std::vector<double>> results(8, std::vector<double>(3000));
  std::vector<std::thread> threads;
  for (auto& result : results) {
    threads.emplace_back([&] {
      for (int repeat = 0; repeat < 20; ++repeat) {
        booster.Predict(rows.data(), 3000, kCols, PredictKind::kPrediction, {}, 1, result.data(), 3000);
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& result : results) EXPECT_TRUE(BitwiseEqual(result, expected));
}

TEST_F(TrainedModel, RejectsAWrongColumnCount) {
  Booster booster = Booster::FromModelText(model_text_);
  std::vector<double> rows(10 * (kCols + 1));
  std::vector<double> out(10);
  try {
    booster.Predict(rows.data(), 10, kCols + 1, PredictKind::kPrediction, {}, 1, out.data(), 10);
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "the model expects 5 features but the batch has 6 columns");
  }
}

TEST_F(TrainedModel, RejectsAnOutputBufferThatIsTooSmall) {
  Booster booster = Booster::FromModelText(model_text_);
  std::vector<double> rows(10 * kCols);
  std::vector<double> out(9);
  EXPECT_THROW(booster.Predict(rows.data(), 10, kCols, PredictKind::kPrediction, {}, 1, out.data(), 9),
               std::invalid_argument);
}

TEST(BoosterLoading, TextThatIsNoModelRaisesLightGbmsMessage) {
  try {
    Booster::FromModelText("this is not a model\n");
    FAIL() << "expected an exception";
  } catch (const LightGbmError& e) {
    EXPECT_NE(std::string(e.what()).find("LGBM_BoosterLoadModelFromString failed: "), std::string::npos) << e.what();
  }
}

TEST(HandleRegistry, UnknownAndReleasedHandlesThrow) {
  jni::HandleRegistry<int> registry;
  const int64_t handle = registry.Add(std::make_shared<int>(42));
  EXPECT_EQ(*registry.Get(handle), 42);
  EXPECT_THROW(registry.Get(handle + 1), jni::UnknownHandle);
  registry.Remove(handle);
  EXPECT_THROW(registry.Get(handle), jni::UnknownHandle);
  EXPECT_THROW(registry.Remove(handle), jni::UnknownHandle);
  EXPECT_EQ(registry.Size(), 0);
}

TEST(HandleRegistry, AnObjectInUseOutlivesItsRelease) {
  jni::HandleRegistry<int> registry;
  const int64_t handle = registry.Add(std::make_shared<int>(7));
  std::shared_ptr<int> in_use = registry.Get(handle);
  std::weak_ptr<int> watcher = in_use;
  registry.Remove(handle);
  EXPECT_FALSE(watcher.expired());
  in_use.reset();
  EXPECT_TRUE(watcher.expired());
}

}  // namespace
}  // namespace treescore
