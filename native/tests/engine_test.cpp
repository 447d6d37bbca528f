// treescore's exact engine against LightGBM's own C API, in C++: models trained here with several
// missing-value settings, scored on rows full of special values, compared bit for bit with
// LGBM_BoosterPredictForMat, in both layouts. (tests/test_engine_fuzz.py fuzzes far more shapes.)
#include <LightGBM/c_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "../src/booster.h"
#include "../src/engine_predictor.h"
#include "../src/engine/exact_scorer.h"
#include "../src/lightgbm_error.h"
#include "../src/model/decision.h"
#include "../src/model/lightgbm_text.h"
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

// Both layouts, each on every SIMD level this CPU runs (x86-64 builds have three).
std::vector<ExactScorer> EveryLayout(const std::string& text) {
  std::vector<ExactScorer> scorers;
  for (Layout layout : {Layout::kNodeWalk, Layout::kQuickScorer}) {
    for (Simd simd : {Simd::kBaseline, Simd::kAvx2, Simd::kAvx512}) {
      if (simd <= BestSimd()) scorers.emplace_back(model::ReadLightGbmText(text), layout, simd);
    }
  }
  return scorers;
}

TEST_P(EngineTest, EqualsLightGbmBitForBitInEveryLayoutAndSimdLevel) {
  const std::string text = Train(GetParam());
  const std::vector<double> rows = Rows(5000, 5, true);  // the last block is half full
  const std::vector<double> expected = LightGbmPredict(text, rows);
  for (const ExactScorer& scorer : EveryLayout(text)) {
    std::vector<double> got(expected.size());
    scorer.Predict(RowMajor(rows.data(), static_cast<int32_t>(expected.size()), kCols).batch(), IterationRange{}, got.data());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(0, std::memcmp(&got[i], &expected[i], sizeof(double)))
          << scorer.layout_name() << " " << scorer.simd_name() << " row " << i << ": " << got[i] << " != " << expected[i];
    }
  }
}

TEST(SimdTest, AScorerRunsEveryLevelUpToTheCpusBestAndRefusesTheOnesAbove) {
#if defined(__x86_64__)
  EXPECT_GE(BestSimd(), Simd::kAvx2) << "every x86-64 machine the project builds and tests on has AVX2";
#else
  EXPECT_EQ(BestSimd(), Simd::kBaseline);
#endif
  const std::vector<Simd> runnable = SimdLevelsUpTo(BestSimd());
  ASSERT_EQ(runnable.back(), BestSimd());
  for (Simd level : runnable) {
    EXPECT_EQ(ExactScorer(model::ReadLightGbmText(Train("")), Layout::kQuickScorer, level).simd_name(), SimdName(level));
  }
  // The refusal, on a CPU of each best level; whatever this host has.
  for (Simd best : SimdLevelsUpTo(Simd::kAvx512)) {
    for (Simd wanted : SimdLevelsUpTo(Simd::kAvx512)) {
      if (wanted <= best) {
        EXPECT_NO_THROW(RequireSimd(wanted, best));
      } else {
        EXPECT_THROW(RequireSimd(wanted, best), std::invalid_argument) << SimdName(wanted) << " on " << SimdName(best);
      }
    }
  }
  if (BestSimd() != Simd::kAvx512) {
    EXPECT_THROW(ExactScorer(model::ReadLightGbmText(Train("")), Layout::kQuickScorer, Simd::kAvx512), std::invalid_argument);
  }
}

TEST(SimdTest, EveryLevelIsReadBackFromItsName) {
  for (Simd level : SimdLevelsUpTo(Simd::kAvx512)) EXPECT_EQ(ParseSimd(SimdName(level)), level);
  EXPECT_THROW(ParseSimd("sse4"), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(MissingValueSettings, EngineTest,
                         ::testing::Values("", "zero_as_missing=true", "use_missing=false", "linear_tree=true",
                                           "linear_tree=true use_missing=false"));

// The Predictor both engines offer the JNI layer: every kind it serves, every thread count and
// an iteration range give LightGBM's bits, including row counts that leave a part's last block short.
TEST(EnginePredictorTest, EqualsLightGbmPredictorForEveryKindRangeAndThreadCount) {
  const std::string text = Train("");
  const Booster lightgbm = Booster::FromModelText(text);
  const EnginePredictor ours = EnginePredictor::FromModelText(text);
  EXPECT_EQ(ours.num_features(), lightgbm.num_features());
  EXPECT_EQ(ours.num_classes(), lightgbm.num_classes());
  for (int num_rows : {0, 1, 7, 8, 9, 1001}) {
    const std::vector<double> rows = Rows(num_rows, 17, true);
    for (PredictKind kind : {PredictKind::kPrediction, PredictKind::kRaw, PredictKind::kLeaf, PredictKind::kContrib}) {
      for (IterationRange range : {IterationRange{}, IterationRange{3, 5}}) {
        const int64_t per_row = lightgbm.OutputsPerRow(kind, range);
        ASSERT_EQ(ours.OutputsPerRow(kind, range), per_row);
        std::vector<double> expected(static_cast<size_t>(num_rows * per_row));
        lightgbm.Predict(rows.data(), num_rows, kCols, kind, range, 1, expected.data(), expected.size());
        for (int threads : {1, 2, 3}) {
          std::vector<double> got(expected.size());
          ours.Predict(rows.data(), num_rows, kCols, kind, range, threads, got.data(), got.size());
          ASSERT_EQ(0, std::memcmp(got.data(), expected.data(), got.size() * sizeof(double)))
              << num_rows << " rows, kind " << static_cast<int>(kind) << ", " << threads << " threads";
        }
      }
    }
  }
}

// A request for some iterations is scored by a slice of the forest holding only their trees
// (EnginePredictor keeps a few): every range, asked twice (built, then reused), gives
// LightGBM's bits in both layouts, for random forests (which average over the range) and a
// transformed objective, including ranges past the ones kept as slices, empty ones and ones
// that run past the last iteration.
TEST(EnginePredictorTest, EveryIterationRangeGivesLightGbmBits) {
  const std::vector<IterationRange> ranges = {{0, 1}, {3, 5}, {0, 0}, {14, 9}, {2, 0}, {1, 1}, {6, 4}, {40, 2}, {3, 5}, {0, 15}};
  for (const char* params : {"", "boosting=rf bagging_fraction=0.7 bagging_freq=1", "objective=binary"}) {
    const std::string text = Train(params);
    const Booster lightgbm = Booster::FromModelText(text);
    for (Layout layout : {Layout::kNodeWalk, Layout::kQuickScorer}) {
      const EnginePredictor ours = EnginePredictor::FromModelText(text, layout);
      const std::vector<double> rows = Rows(37, 5, true);
      for (int pass = 0; pass < 2; ++pass) {
        for (const IterationRange& range : ranges) {
          for (PredictKind kind : {PredictKind::kPrediction, PredictKind::kRaw, PredictKind::kLeaf, PredictKind::kContrib}) {
            const int64_t per_row = lightgbm.OutputsPerRow(kind, range);
            ASSERT_EQ(ours.OutputsPerRow(kind, range), per_row);
            std::vector<double> expected(static_cast<size_t>(37 * per_row)), got(expected.size());
            lightgbm.Predict(rows.data(), 37, kCols, kind, range, 1, expected.data(), expected.size());
            ours.Predict(rows.data(), 37, kCols, kind, range, 2, got.data(), got.size());
            ASSERT_EQ(0, std::memcmp(got.data(), expected.data(), got.size() * sizeof(double)))
                << params << ", range " << range.start_iteration << "+" << range.num_iterations << ", kind "
                << static_cast<int>(kind) << ", pass " << pass;
          }
          // A grid over the range: each point's bits are those of its own row over the range.
          const GridPoints grid{3, {1}, rows.data()};
          const std::vector<double> base = Rows(5, 9, true);
          std::vector<double> point_rows;
          for (int r = 0; r < 5; ++r) {
            for (int p = 0; p < grid.points; ++p) {
              point_rows.insert(point_rows.end(), base.begin() + r * kCols, base.begin() + (r + 1) * kCols);
              point_rows[point_rows.size() - kCols + 1] = rows[static_cast<size_t>(r * grid.points + p)];
            }
          }
          std::vector<double> expected(15), got(15);
          lightgbm.Predict(point_rows.data(), 15, kCols, PredictKind::kRaw, range, 1, expected.data(), expected.size());
          ours.PredictGrid(base.data(), 5, kCols, grid, PredictKind::kRaw, range, 1, got.data(), got.size());
          ASSERT_EQ(0, std::memcmp(got.data(), expected.data(), got.size() * sizeof(double)))
              << params << ", grid over range " << range.start_iteration << "+" << range.num_iterations;
        }
      }
    }
  }
}

// The rows a grid's points make: base row r with point k's values in its varying features.
std::vector<double> PointRows(const std::vector<double>& base, const GridPoints& grid) {
  const size_t num_base = base.size() / kCols, points = static_cast<size_t>(grid.points);
  std::vector<double> rows(num_base * points * kCols);
  for (size_t e = 0; e < num_base * points; ++e) {
    std::memcpy(rows.data() + e * kCols, base.data() + e / points * kCols, kCols * sizeof(double));
    for (size_t v = 0; v < grid.varying.size(); ++v) {
      rows[e * kCols + static_cast<size_t>(grid.varying[v])] = grid.values[e * grid.varying.size() + v];
    }
  }
  return rows;
}

// A grid shares the work on the features that do not vary; every point still has LightGBM's bits
// for that point's row: both layouts, both kinds that share, ranges, threads, special values in
// the points, grids whose varying features no tree reads, and linear trees, whose leaves read
// features their nodes may not.
TEST(EnginePredictorTest, GridPointsEqualLightGbmOnEachPointsRow) {
  for (const char* params : {"", "zero_as_missing=true", "linear_tree=true"}) {
    const std::string text = Train(params);
    const Booster lightgbm = Booster::FromModelText(text);
    for (Layout layout : {Layout::kNodeWalk, Layout::kQuickScorer}) {
      const EnginePredictor ours = EnginePredictor::FromModelText(text, layout);
      for (const std::vector<int32_t>& varying : {std::vector<int32_t>{0}, std::vector<int32_t>{2, 1}, std::vector<int32_t>{}}) {
        for (int num_base : {0, 1, 9, 130}) {
          const std::vector<double> base = Rows(num_base, 23, true);
          const int points = 15;
          const std::vector<double> special = Rows(num_base * points * 4, 29, true);
          std::vector<double> values(static_cast<size_t>(num_base) * points * varying.size());
          for (size_t i = 0; i < values.size(); ++i) values[i] = special[i];
          const GridPoints grid{points, varying, values.data()};
          const std::vector<double> rows = PointRows(base, grid);
          for (PredictKind kind : {PredictKind::kPrediction, PredictKind::kRaw, PredictKind::kLeaf}) {
            for (IterationRange range : {IterationRange{}, IterationRange{3, 5}}) {
              const int64_t size = static_cast<int64_t>(num_base) * points * lightgbm.OutputsPerRow(kind, range);
              std::vector<double> expected(static_cast<size_t>(size));
              lightgbm.Predict(rows.data(), num_base * points, kCols, kind, range, 1, expected.data(), size);
              for (int threads : {1, 2}) {
                std::vector<double> got(expected.size());
                ours.PredictGrid(base.data(), num_base, kCols, grid, kind, range, threads, got.data(), size);
                ASSERT_EQ(0, std::memcmp(got.data(), expected.data(), got.size() * sizeof(double)))
                    << ours.scorer().layout_name() << ", " << varying.size() << " varying, " << num_base
                    << " base rows, kind " << static_cast<int>(kind) << ", " << threads << " threads";
              }
              std::vector<double> by_default(expected.size());  // LightGBM's predictor through the default
              lightgbm.PredictGrid(base.data(), num_base, kCols, grid, kind, range, 1, by_default.data(), size);
              ASSERT_EQ(0, std::memcmp(by_default.data(), expected.data(), expected.size() * sizeof(double)));
            }
          }
        }
      }
    }
  }
}

TEST(EnginePredictorTest, RefusesBadGridsWithReasons) {
  const EnginePredictor ours = EnginePredictor::FromModelText(Train(""));
  std::vector<double> rows(kCols * 2), values(2 * 3 * 2), out(2 * 3);
  const auto refuses = [&](const GridPoints& grid, int64_t capacity) {
    EXPECT_THROW(ours.PredictGrid(rows.data(), 2, kCols, grid, PredictKind::kRaw, {}, 1, out.data(), capacity),
                 std::invalid_argument);
  };
  refuses(GridPoints{3, {0, 0}, values.data()}, 6);      // a feature twice
  refuses(GridPoints{3, {kCols}, values.data()}, 6);     // no such feature
  refuses(GridPoints{3, {0}, nullptr}, 6);               // no values
  refuses(GridPoints{0, {0}, values.data()}, 6);         // no points
  refuses(GridPoints{3, {0}, values.data()}, 5);         // no room for every point
}

// Every layout a FeatureBatch can have gives the bits of a row-major matrix, on both engines:
// column-major (one matrix), columns each in memory of their own, a strided view that starts
// part way into its columns, and threads splitting any of them.
TEST(EnginePredictorTest, EveryBatchLayoutGivesTheBitsOfRowMajorRows) {
  const std::string text = Train("zero_as_missing=true");
  const Booster lightgbm = Booster::FromModelText(text);
  const EnginePredictor walk = EnginePredictor::FromModelText(text, Layout::kNodeWalk);
  const EnginePredictor quick = EnginePredictor::FromModelText(text, Layout::kQuickScorer);
  const int num_rows = 203, skip = 5;
  const std::vector<double> rows = Rows(num_rows + skip, 41, true);
  // Column-major: column f at f * num_rows; columns of their own; rows `skip` on, 2 doubles apart.
  std::vector<double> column_major(static_cast<size_t>(num_rows) * kCols);
  std::vector<std::vector<double>> own(kCols), strided(kCols);
  for (int f = 0; f < kCols; ++f) {
    for (int r = 0; r < num_rows + skip; ++r) {
      const double v = rows[static_cast<size_t>(r) * kCols + f];
      if (r >= skip) column_major[static_cast<size_t>(f) * num_rows + (r - skip)] = v;
      if (r >= skip) own[f].push_back(v);
      strided[f].push_back(v);
      strided[f].push_back(-1.0);  // never read
    }
  }
  std::vector<const double*> column_major_ptrs, own_ptrs, strided_ptrs;
  for (int f = 0; f < kCols; ++f) {
    column_major_ptrs.push_back(column_major.data() + static_cast<size_t>(f) * num_rows);
    own_ptrs.push_back(own[f].data());
    strided_ptrs.push_back(strided[f].data());
  }
  const RowMajor row_major(rows.data() + skip * kCols, num_rows, kCols);
  const FeatureBatch layouts[] = {{column_major_ptrs.data(), 1, 0, num_rows, kCols},
                                  {own_ptrs.data(), 1, 0, num_rows, kCols},
                                  {strided_ptrs.data(), 2, skip, num_rows, kCols}};
  EXPECT_NE(layouts[0].ColumnMajorData(), nullptr);
  EXPECT_EQ(layouts[1].ColumnMajorData(), nullptr);
  EXPECT_NE(row_major.batch().RowMajorData(), nullptr);
  for (const Predictor* model : std::initializer_list<const Predictor*>{&lightgbm, &walk, &quick}) {
    for (PredictKind kind : {PredictKind::kPrediction, PredictKind::kRaw, PredictKind::kLeaf}) {
      const int64_t size = num_rows * lightgbm.OutputsPerRow(kind, {});
      std::vector<double> expected(static_cast<size_t>(size));
      lightgbm.Predict(row_major.batch(), kind, {}, 1, expected.data(), size);
      for (const FeatureBatch& batch : layouts) {
        for (int threads : {1, 3}) {
          if (model->engine() == Engine::kLightGbm && threads > 1) continue;  // LightGBM's threads are process-wide
          std::vector<double> got(expected.size());
          model->Predict(batch, kind, {}, threads, got.data(), size);
          ASSERT_EQ(0, std::memcmp(got.data(), expected.data(), got.size() * sizeof(double)))
              << "engine " << static_cast<int>(model->engine()) << ", stride " << batch.row_stride << ", kind "
              << static_cast<int>(kind) << ", " << threads << " threads";
        }
      }
    }
    // A grid over base rows in any layout: the bits of the row-major base rows' grid.
    const int points = 4;
    std::vector<double> values(static_cast<size_t>(num_rows) * points * 2);
    for (size_t i = 0; i < values.size(); ++i) values[i] = rows[(i * 7) % rows.size()];
    const GridPoints grid{points, {1, 3}, values.data()};
    std::vector<double> expected(static_cast<size_t>(num_rows) * points);
    model->PredictGrid(row_major.batch(), grid, PredictKind::kRaw, {}, 1, expected.data(), expected.size());
    for (const FeatureBatch& batch : layouts) {
      std::vector<double> got(expected.size());
      model->PredictGrid(batch, grid, PredictKind::kRaw, {}, 1, got.data(), got.size());
      ASSERT_EQ(0, std::memcmp(got.data(), expected.data(), got.size() * sizeof(double))) << "grid, stride " << batch.row_stride;
    }
  }
  std::vector<const double*> with_null = own_ptrs;
  with_null[2] = nullptr;
  std::vector<double> out(num_rows);
  EXPECT_THROW(quick.Predict(FeatureBatch{with_null.data(), 1, 0, num_rows, kCols}, PredictKind::kRaw, {}, 1, out.data(), num_rows),
               std::invalid_argument);
}

TEST(EnginePredictorTest, RefusesBadShapesWithReasons) {
  const EnginePredictor ours = EnginePredictor::FromModelText(Train(""));
  std::vector<double> rows(kCols * 2), out(2);
  EXPECT_THROW(ours.Predict(rows.data(), 2, kCols - 1, PredictKind::kRaw, {}, 1, out.data(), 2), std::invalid_argument);
  EXPECT_THROW(ours.Predict(rows.data(), 2, kCols, PredictKind::kRaw, {}, 0, out.data(), 2), std::invalid_argument);
  EXPECT_THROW(ours.Predict(rows.data(), 2, kCols, PredictKind::kRaw, {}, 1, out.data(), 1), std::invalid_argument);
}

}  // namespace
}  // namespace engine
}  // namespace treescore
