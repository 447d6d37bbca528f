// The native memory account: every allocation is charged to its kind where it is made and given
// back to that kind when freed, and a model's held bytes are what its load and its later builds
// kept.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "booster.h"
#include "engine_predictor.h"
#include "lightgbm_training.h"
#include "memory/account.h"
#include "memory/working_memory.h"
#include "wire_limits.h"

namespace treescore {
namespace {

using memory::Kind;

int64_t Held(Kind kind) { return memory::Read().held[static_cast<int>(kind)]; }

// Keeps the compiler from eliding an allocation nothing reads, as clang may.
void Escape(const void* block) { asm volatile("" : : "g"(block) : "memory"); }

uint64_t Bits(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// A regression model trained on `rows` rows of `cols` features drawn uniformly from [-1, 1), each
// labelled `label(row)` plus noise of the same range; `shape` sets the trees' size.
struct Trained {
  std::vector<double> features;  // row-major
  std::string text;
};
template <typename Label>
Trained TrainRegression(int rows, int cols, uint64_t seed, Label label, const std::string& shape, int iterations) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> uniform(-1, 1);
  Trained trained{std::vector<double>(static_cast<size_t>(rows) * cols), {}};
  for (double& value : trained.features) value = uniform(random);
  std::vector<float> labels(static_cast<size_t>(rows));
  for (int i = 0; i < rows; ++i) {
    labels[static_cast<size_t>(i)] =
        static_cast<float>(label(trained.features.data() + static_cast<size_t>(i) * cols) + uniform(random));
  }
  BoosterHandle booster = test_models::Train(trained.features, labels, cols, "verbose=-1",
                                             "objective=regression verbose=-1 num_threads=1 " + shape, iterations);
  trained.text = test_models::ModelText(booster);
  LGBM_BoosterFree(booster);
  return trained;
}

TEST(MemoryAccount, ChargesTheScopesKindAndGivesBackToItOnAnyThread) {
  const int64_t models_before = Held(Kind::kModels);
  const int64_t working_before = Held(Kind::kWorking);
  std::unique_ptr<std::vector<double>> kept;
  int64_t net = 0;
  {
    memory::Charge charge(Kind::kModels);
    kept = std::make_unique<std::vector<double>>(1000);
    Escape(kept->data());
    net = charge.net_bytes();
  }
  // The vector's 8,000 bytes and the vector object, each with its 16-byte header.
  EXPECT_EQ(net, 8000 + 16 + static_cast<int64_t>(sizeof(std::vector<double>)) + 16);
  EXPECT_EQ(Held(Kind::kModels) - models_before, net);
  std::thread([&] { kept.reset(); }).join();  // freed where the default kind is working
  EXPECT_EQ(Held(Kind::kModels), models_before);
  EXPECT_EQ(Held(Kind::kWorking), working_before);
}

TEST(MemoryAccount, ScopesNestAndRestoreTheOuterKind) {
  const int64_t programs_before = Held(Kind::kPrograms);
  memory::Charge outer(Kind::kPrograms);
  std::vector<char> programs_a(100);
  Escape(programs_a.data());
  int64_t inner_net = 0;
  {
    memory::Charge inner(Kind::kModels);
    std::vector<char> models(50);
    Escape(models.data());
    inner_net = inner.net_bytes();
  }
  std::vector<char> programs_b(200);
  Escape(programs_b.data());
  EXPECT_EQ(inner_net, 50 + 16);
  EXPECT_EQ(outer.net_bytes(), 100 + 16 + 200 + 16);
  EXPECT_EQ(Held(Kind::kPrograms) - programs_before, 100 + 16 + 200 + 16);
}

TEST(MemoryAccount, AThreadsPeakCoversWhatItHeldBrieflyAndRestarts) {
  memory::TakeThreadPeak();
  const int64_t before = memory::Read().total();
  {
    std::vector<char> brief(1 << 20);
    Escape(brief.data());
  }
  EXPECT_GE(memory::TakeThreadPeak(), before + (1 << 20));
  EXPECT_LT(memory::TakeThreadPeak(), before + (1 << 20));  // the watch restarted
}

TEST(MemoryAccount, OverAlignedBlocksKeepTheirAlignmentAndAreCounted) {
  struct alignas(128) Wide {
    double lanes[16];
  };
  const int64_t before = memory::Read().total();
  auto wide = std::make_unique<Wide>();
  Escape(wide.get());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(wide.get()) % 128, 0u);
  EXPECT_EQ(memory::Read().total() - before, static_cast<int64_t>(sizeof(Wide)) + 128);
  wide.reset();
  EXPECT_EQ(memory::Read().total(), before);
}

TEST(MemoryAccount, BuffersAreTheirOwnKindAndThePeakCoversThem) {
  const int64_t before = Held(Kind::kBuffers);
  void* buffer = memory::AllocateBuffer(1 << 20);
  ASSERT_NE(buffer, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer) % 16, 0u);
  EXPECT_EQ(Held(Kind::kBuffers) - before, (1 << 20) + 16);
  EXPECT_GE(memory::Read().peak, memory::Read().total());
  memory::FreeBuffer(buffer);
  memory::FreeBuffer(nullptr);
  EXPECT_EQ(Held(Kind::kBuffers), before);
  EXPECT_THROW(memory::AllocateBuffer(SIZE_MAX - 8), std::bad_alloc);
  EXPECT_EQ(Held(Kind::kBuffers), before);
}

// A model's held bytes: what loading kept, then its TreeSHAP tables and slices, all of which
// the models kind gives back when the model is freed.
TEST(MemoryAccount, AModelHoldsWhatItsLoadAndItsLaterBuildsKept) {
  constexpr int kRows = 500, kCols = 6;
  std::mt19937_64 random(3);
  std::uniform_real_distribution<double> uniform(-1, 1);
  std::vector<double> features(kRows * kCols);
  for (double& value : features) value = uniform(random);
  std::vector<float> labels(kRows);
  for (int i = 0; i < kRows; ++i) labels[i] = static_cast<float>(features[i * kCols] + features[i * kCols + 2] > 0);
  BoosterHandle trained = test_models::Train(features, labels, kCols, "verbose=-1",
                                             "objective=binary num_leaves=15 verbose=-1 num_threads=1", 30);
  const std::string text = test_models::ModelText(trained);
  LGBM_BoosterFree(trained);

  const int64_t models_before = Held(Kind::kModels);
  std::unique_ptr<EnginePredictor> model;
  int64_t load_bytes = 0;
  {
    memory::Charge charge(Kind::kModels);
    model = std::make_unique<EnginePredictor>(EnginePredictor::FromModelText(text));
    load_bytes = charge.net_bytes();
  }
  EXPECT_GT(load_bytes, static_cast<int64_t>(text.size()) / 4);  // trees, layout and leaf values
  EXPECT_EQ(model->built_bytes(), 0);
  EXPECT_EQ(Held(Kind::kModels) - models_before, load_bytes);

  std::vector<double> out(kRows * (kCols + 1));
  model->Predict(features.data(), kRows, kCols, PredictKind::kContrib, IterationRange{}, 2, out.data(),
                 static_cast<int64_t>(out.size()));
  const int64_t with_tables = model->built_bytes();
  EXPECT_GT(with_tables, 0);
  model->Predict(features.data(), kRows, kCols, PredictKind::kRaw, IterationRange{5, 10}, 1, out.data(),
                 static_cast<int64_t>(out.size()));
  EXPECT_GT(model->built_bytes(), with_tables);  // the slice of iterations 5 to 14
  EXPECT_EQ(Held(Kind::kModels) - models_before, load_bytes + model->built_bytes());

  model.reset();
  EXPECT_EQ(Held(Kind::kModels), models_before);

  // LightGBM's own booster, linked into the same library, is counted the same way.
  std::unique_ptr<Booster> booster;
  {
    memory::Charge charge(Kind::kModels);
    booster = std::make_unique<Booster>(Booster::FromModelText(text));
    load_bytes = charge.net_bytes();
  }
  EXPECT_GT(load_bytes, static_cast<int64_t>(text.size()) / 4);
  EXPECT_EQ(Held(Kind::kModels) - models_before, load_bytes);
  booster.reset();
  EXPECT_EQ(Held(Kind::kModels), models_before);
}

// Where LightGBM must have a batch's rows copied (a view of separate columns, or a grid's points
// written out as rows), the copies hold about a MiB at a time, not the batch: the same bits as
// one call over the whole matrix, with working memory that does not grow with the rows.
TEST(MemoryAccount, LightGbmsRowCopiesDoNotGrowWithTheBatch) {
  constexpr int kTrainRows = 500, kCols = 6, kRows = 120000, kPoints = 4;
  std::mt19937_64 random(5);
  std::uniform_real_distribution<double> uniform(-1, 1);
  std::vector<double> train(kTrainRows * kCols);
  for (double& value : train) value = uniform(random);
  std::vector<float> labels(kTrainRows);
  for (int i = 0; i < kTrainRows; ++i) labels[i] = static_cast<float>(train[i * kCols] - train[i * kCols + 3]);
  BoosterHandle trained = test_models::Train(train, labels, kCols, "verbose=-1",
                                             "objective=regression num_leaves=7 verbose=-1 num_threads=1", 10);
  const Booster booster = Booster::FromModelText(test_models::ModelText(trained));
  LGBM_BoosterFree(trained);

  std::vector<double> matrix(static_cast<size_t>(kRows) * kCols);  // row-major, the reference's input
  std::vector<std::vector<double>> columns(kCols, std::vector<double>(kRows));
  for (int r = 0; r < kRows; ++r) {
    for (int f = 0; f < kCols; ++f) matrix[static_cast<size_t>(r) * kCols + f] = columns[f][r] = uniform(random);
  }
  std::vector<const double*> pointers;
  for (const auto& column : columns) pointers.push_back(column.data());
  FeatureBatch separate;
  separate.columns = pointers.data();
  separate.num_rows = kRows;
  separate.num_cols = kCols;
  ASSERT_EQ(separate.RowMajorData(), nullptr);
  ASSERT_EQ(separate.ColumnMajorData(), nullptr);
  const int64_t batch_bytes = static_cast<int64_t>(kRows) * kCols * 8;

  std::vector<double> expected(kRows), got(kRows);
  booster.Predict(matrix.data(), kRows, kCols, PredictKind::kRaw, IterationRange{}, 1, expected.data(), kRows);
  memory::TakeThreadPeak();
  int64_t before = memory::Read().total();
  booster.Predict(separate, PredictKind::kRaw, IterationRange{}, 1, got.data(), kRows);
  EXPECT_LT(memory::TakeThreadPeak() - before, batch_bytes / 3);
  for (int r = 0; r < kRows; ++r) ASSERT_EQ(Bits(got[r]), Bits(expected[r])) << "row " << r;

  // A grid over the first quarter of the rows, varying feature 2: each point's row scored alone.
  const int base_rows = kRows / kPoints;
  GridPoints grid;
  grid.points = kPoints;
  grid.varying = {2};
  std::vector<double> values(static_cast<size_t>(base_rows) * kPoints);
  for (double& value : values) value = uniform(random);
  grid.values = values.data();
  std::vector<double> point_rows(static_cast<size_t>(base_rows) * kPoints * kCols);
  for (int e = 0; e < base_rows * kPoints; ++e) {
    for (int f = 0; f < kCols; ++f) point_rows[static_cast<size_t>(e) * kCols + f] = columns[f][e / kPoints];
    point_rows[static_cast<size_t>(e) * kCols + 2] = values[e];
  }
  booster.Predict(point_rows.data(), base_rows * kPoints, kCols, PredictKind::kRaw, IterationRange{}, 1,
                  expected.data(), kRows);
  memory::TakeThreadPeak();
  before = memory::Read().total();
  booster.PredictGrid(separate.Rows(0, base_rows), grid, PredictKind::kRaw, IterationRange{}, 1, got.data(), kRows);
  EXPECT_LT(memory::TakeThreadPeak() - before, batch_bytes / 3);
  for (int e = 0; e < base_rows * kPoints; ++e) ASSERT_EQ(Bits(got[e]), Bits(expected[e])) << "point " << e;
}

// Contributions of deep trees, whose leaves replay their paths through a memo, keep their working
// memory within the shares a task slot's allowance gives TreeSHAP (memory/working_memory.h):
// a block of rows, the memo and per-pass scratch. The bits stay LightGBM's.
TEST(MemoryAccount, DeepTreesContributionsStayWithinTheirShareOfTheSlot) {
  constexpr int kTrainRows = 8000, kCols = 20, kRows = 6000;
  const Trained trained = TrainRegression(kTrainRows, kCols, 7, [](const double* row) { return row[0] * row[3] + row[5]; },
                                          "num_leaves=255 min_data_in_leaf=5", 12);
  const std::vector<double>& features = trained.features;
  const std::string& text = trained.text;
  const EnginePredictor model = EnginePredictor::FromModelText(text);
  const Booster reference = Booster::FromModelText(text);
  ASSERT_GT(model.scorer().ShapTableStats().replayed_leaves, 0) << "no leaf replays its path";

  const size_t outputs = static_cast<size_t>(kRows) * (kCols + 1);
  std::vector<double> expected(outputs), got(outputs);
  reference.Predict(features.data(), kRows, kCols, PredictKind::kContrib, IterationRange{}, 1, expected.data(),
                    static_cast<int64_t>(outputs));
  model.Predict(features.data(), 8, kCols, PredictKind::kContrib, IterationRange{}, 1, got.data(),
                static_cast<int64_t>(outputs));  // builds the tables, which the model keeps
  memory::TakeThreadPeak();
  const int64_t before = memory::Read().total();
  model.Predict(features.data(), kRows, kCols, PredictKind::kContrib, IterationRange{}, 1, got.data(),
                static_cast<int64_t>(outputs));
  EXPECT_LE(memory::TakeThreadPeak() - before, memory::kShapBytes + memory::kScratchBytes);
  for (size_t i = 0; i < outputs; ++i) ASSERT_EQ(Bits(got[i]), Bits(expected[i])) << "output " << i;
  EXPECT_EQ(model.WorkingBytes(), wire::kTaskWorkingMemoryBytes) << "an ordinary model is charged more than the allowance";
}

// A model of thousands of trees needs more scratch than the allowance's share (a value or leaf set
// per tree and block row): WorkingBytes says how much, so that the model cache can charge it, and
// no call on either layout holds more.
TEST(MemoryAccount, ManyTreesCallsStayWithinTheModelsWorkingBytes) {
  constexpr int kTrainRows = 1000, kCols = 8, kRows = 100, kTrees = 6000, kPoints = 3;
  const Trained trained = TrainRegression(kTrainRows, kCols, 11, [](const double* row) { return row[0]; },
                                          "num_leaves=4 min_data_in_leaf=5 learning_rate=0.001", kTrees);
  const std::vector<double>& features = trained.features;
  const std::string& text = trained.text;
  const Booster reference = Booster::FromModelText(text);
  std::vector<double> expected(kRows);
  reference.Predict(features.data(), kRows, kCols, PredictKind::kPrediction, IterationRange{}, 1, expected.data(), kRows);
  const GridPoints grid{kPoints, {2}, features.data()};  // feature 2 takes each base row's kPoints values

  for (const engine::Layout layout : {engine::Layout::kQuickScorer, engine::Layout::kNodeWalk}) {
    SCOPED_TRACE(layout == engine::Layout::kQuickScorer ? "quickscorer" : "node walk");
    const EnginePredictor model = EnginePredictor::FromModelText(text, layout);
    const memory::Shares shares = model.scorer().WorkingShares();
    EXPECT_EQ(model.WorkingBytes(), shares.total());
    EXPECT_GT(shares.scratch, memory::kScratchBytes) << "the model fits the scratch share: the test shows nothing";
    std::vector<double> out(static_cast<size_t>(kRows) * (kTrees + kCols + 1) * kPoints);
    const auto capacity = static_cast<int64_t>(out.size());
    model.Predict(features.data(), 8, kCols, PredictKind::kContrib, IterationRange{}, 1, out.data(), capacity);  // builds the tables
    const auto peak_of = [&](const auto& call) {
      memory::TakeThreadPeak();
      const int64_t before = memory::Read().total();
      call();
      return memory::TakeThreadPeak() - before;
    };
    // The engine reads these rows in place: no call copies them.
    for (const PredictKind kind : {PredictKind::kPrediction, PredictKind::kLeaf}) {
      EXPECT_LE(peak_of([&] { model.Predict(features.data(), kRows, kCols, kind, IterationRange{}, 1, out.data(), capacity); }),
                shares.scratch) << "kind " << static_cast<int>(kind);
    }
    EXPECT_LE(peak_of([&] {
      model.PredictGrid(features.data(), kRows, kCols, grid, PredictKind::kRaw, IterationRange{}, 1, out.data(), capacity);
    }), shares.scratch) << "grid";
    EXPECT_LE(peak_of([&] {
      model.Predict(features.data(), kRows, kCols, PredictKind::kContrib, IterationRange{}, 1, out.data(), capacity);
    }), shares.scratch + shares.shap) << "contributions";
    model.Predict(features.data(), kRows, kCols, PredictKind::kPrediction, IterationRange{}, 1, out.data(), capacity);
    for (int r = 0; r < kRows; ++r) ASSERT_EQ(Bits(out[static_cast<size_t>(r)]), Bits(expected[static_cast<size_t>(r)])) << "row " << r;
  }
}

// A tree of thousands of leaves needs more TreeSHAP scratch per pass than the scratch share (a
// pattern, position and slot per node or leaf and pass row), and its replayed leaves' addends for
// one pass outgrow half the memo's room: WorkingShares counts both, and the call holds no more.
TEST(MemoryAccount, HugeTreeContributionsStayWithinTheModelsShares) {
  constexpr int kTrainRows = 12000, kCols = 10, kRows = 64;
  const Trained trained = TrainRegression(kTrainRows, kCols, 13, [](const double* row) { return row[0] * row[1] + row[2]; },
                                          "num_leaves=4000 min_data_in_leaf=2", 1);
  const std::vector<double>& features = trained.features;
  const std::string& text = trained.text;
  const EnginePredictor model = EnginePredictor::FromModelText(text);
  const Booster reference = Booster::FromModelText(text);
  const memory::Shares shares = model.scorer().WorkingShares();
  EXPECT_GT(shares.scratch, memory::kScratchBytes) << "the tree fits the scratch share: the test shows nothing";
  EXPECT_GT(shares.shap, memory::kShapBytes) << "a pass's addends fit the memo: the test shows nothing";

  const size_t outputs = static_cast<size_t>(kRows) * (kCols + 1);
  std::vector<double> expected(outputs), got(outputs);
  reference.Predict(features.data(), kRows, kCols, PredictKind::kContrib, IterationRange{}, 1, expected.data(),
                    static_cast<int64_t>(outputs));
  model.Predict(features.data(), 8, kCols, PredictKind::kContrib, IterationRange{}, 1, got.data(),
                static_cast<int64_t>(outputs));  // builds the tables, which the model keeps
  memory::TakeThreadPeak();
  const int64_t before = memory::Read().total();
  model.Predict(features.data(), kRows, kCols, PredictKind::kContrib, IterationRange{}, 1, got.data(),
                static_cast<int64_t>(outputs));
  EXPECT_LE(memory::TakeThreadPeak() - before, shares.scratch + shares.shap);
  for (size_t i = 0; i < outputs; ++i) ASSERT_EQ(Bits(got[i]), Bits(expected[i])) << "output " << i;
}

}  // namespace
}  // namespace treescore
