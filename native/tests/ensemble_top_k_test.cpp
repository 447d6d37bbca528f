// Exact top-K selection over ensemble programs against Program::Evaluate: for every combine rule,
// transforms, directions, group counts and weights (a zero among them), for an ensemble nested in
// another and for routes (at the root and inside an ensemble), every row of each group's true top
// k (ties included) is kept with the bits the program scores it with, and rows are dropped before
// their last stage. Members read the input's columns in orders of their own.
#include <LightGBM/c_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "../src/booster.h"
#include "../src/engine_predictor.h"
#include "../src/program/program.h"
#include "lightgbm_training.h"
#include "top_k_checks.h"

namespace treescore {
namespace {

constexpr int kFeatures = 5;
constexpr int kInputs = 6;

// Row-major rows of kInputs columns: normal values, with NaN, +0 and -0 among them.
std::vector<double> Inputs(int rows, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<double> data(static_cast<size_t>(rows) * kInputs);
  for (double& v : data) {
    const unsigned pick = rng() % 25;
    v = pick == 0 ? std::numeric_limits<double>::quiet_NaN() : pick == 1 ? 0.0 : pick == 2 ? -0.0 : normal(rng);
  }
  return data;
}

std::string Train(const std::string& objective, unsigned seed) {
  const int rows = 3000;
  std::vector<double> x(static_cast<size_t>(rows) * kFeatures);
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  for (double& v : x) v = normal(rng);
  std::vector<float> labels(rows);
  for (int i = 0; i < rows; ++i) {
    const double signal = x[i * kFeatures] - 0.6 * x[i * kFeatures + 1] + std::sin(x[i * kFeatures + 2]);
    if (objective == "binary") labels[i] = signal + 0.5 * normal(rng) > 0.3 ? 1.f : 0.f;
    else if (objective == "poisson") labels[i] = static_cast<float>(std::floor(std::exp(0.4 * std::tanh(signal)) * (rng() % 4)));
    else labels[i] = static_cast<float>(signal + 0.2 * normal(rng));
  }
  BoosterHandle booster = test_models::Train(x, labels, kFeatures, "verbose=-1",
                                              "objective=" + objective + " num_leaves=15 verbose=-1 num_threads=1 "
                                              "min_data_in_leaf=5 learning_rate=0.15", 40);
  const std::string text = test_models::ModelText(booster);
  LGBM_BoosterFree(booster);
  return text;
}

struct Members {
  std::vector<std::shared_ptr<const Predictor>> models;
  Members() {
    for (const auto& [objective, seed] : {std::pair<std::string, unsigned>{"regression", 1}, {"binary", 2}, {"poisson", 3}}) {
      models.push_back(std::make_shared<EnginePredictor>(EnginePredictor::FromModelText(Train(objective, seed))));
    }
  }
};

const Members& TrainedMembers() {
  static const Members members;
  return members;
}

// An ensemble of the three members: the regression's prediction, the binary model's probability
// and the poisson model's raw margin, each reading the inputs in its own order.
Program Ensemble(const std::vector<std::shared_ptr<const Predictor>>& models, std::vector<double> weights,
                 Combine combine, std::vector<Transform> transforms) {
  std::vector<ProgramNode> nodes;
  nodes.push_back(ModelNode{models[0], PredictKind::kPrediction, {0, 1, 2, 3, 4}});
  nodes.push_back(ModelNode{models[1], PredictKind::kPrediction, {5, 1, 0, 3, 2}});
  nodes.push_back(ModelNode{models[2], PredictKind::kRaw, {2, 3, 4, 5, 0}});
  nodes.push_back(EnsembleNode{{0, 1, 2}, std::move(weights), combine, std::move(transforms)});
  return Program(std::move(nodes), kInputs, 0);
}

// combine, transforms, weights, k, descending, groups
using Case = std::tuple<Combine, std::vector<Transform>, std::vector<double>, int, bool, int>;

class EnsembleTopKTest : public ::testing::TestWithParam<Case> {};

constexpr int kRows = 12000;

// Route indices for kRows rows and `slots` route slots: 0 to routes - 1, and -1 (no route, a
// NaN score) for one row in 50.
std::vector<int32_t> RouteIndices(int slots, int routes, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> indices(static_cast<size_t>(kRows) * static_cast<size_t>(slots));
  for (int32_t& index : indices) index = rng() % 50 == 0 ? -1 : static_cast<int32_t>(rng() % static_cast<unsigned>(routes));
  return indices;
}

// Selects 3 batches of kRows rows of `program` (with `routes`, kRows x its route slots, if it
// has routes) and expects every row of each group's true top k (ties included) and every row
// it scores NaN kept with the program's bits, and, with one group, rows dropped before their end.
void ExpectEachGroupsTopK(const Program& program, int k, bool descending, int num_groups,
                          const std::vector<int32_t>& routes = {}) {
  TopKSelector selector(RankedScore(program, 7), TopKQuery{k, descending});
  ASSERT_TRUE(selector.boundable());

  const int batches = 3, batch_rows = kRows / batches, n = kRows;
  const size_t slots = static_cast<size_t>(program.num_route_slots());
  const int32_t* route_index = slots == 0 ? nullptr : routes.data();
  const std::vector<double> inputs = Inputs(n, 41);
  const RowMajor matrix(inputs.data(), n, kInputs);
  std::vector<double> full(static_cast<size_t>(n));
  program.Evaluate(matrix.batch(), n, route_index, 1, GridPoints{}, 0, 1, full.data());
  std::vector<int32_t> groups(static_cast<size_t>(n));
  std::mt19937 rng(8);
  for (int32_t& g : groups) g = static_cast<int32_t>(rng() % static_cast<unsigned>(num_groups));

  std::vector<int32_t> kept(static_cast<size_t>(n));
  std::vector<double> scores(static_cast<size_t>(n));
  for (int b = 0; b < batches; ++b) {
    const size_t at = static_cast<size_t>(b) * batch_rows;
    selector.Select(matrix.batch().Rows(static_cast<int64_t>(at), batch_rows), num_groups == 1 ? nullptr : groups.data() + at,
                    -INFINITY, kept.data() + at, scores.data() + at, route_index == nullptr ? nullptr : route_index + at * slots);
  }
  for (int r = 0; r < n; ++r) {
    if (std::isnan(full[r])) ASSERT_EQ(1, kept[static_cast<size_t>(r)]) << "row " << r << " scores NaN";
  }
  for (int g = 0; g < num_groups; ++g) {
    std::vector<double> keys;
    for (int r = 0; r < n; ++r) {
      const bool in_group = num_groups == 1 || groups[static_cast<size_t>(r)] == g;
      if (in_group && !std::isnan(full[r])) keys.push_back(descending ? full[r] : -full[r]);
    }
    std::sort(keys.begin(), keys.end(), std::greater<double>());
    const double bar = keys[std::min(keys.size(), static_cast<size_t>(k)) - 1];
    for (int r = 0; r < n; ++r) {
      if (num_groups != 1 && groups[static_cast<size_t>(r)] != g) continue;
      if ((descending ? full[r] : -full[r]) >= bar) ASSERT_EQ(1, kept[static_cast<size_t>(r)]) << "row " << r << " group " << g;
    }
  }
  int kept_rows = 0;
  for (int r = 0; r < n; ++r) {
    if (kept[static_cast<size_t>(r)] != 1) continue;
    ++kept_rows;
    ASSERT_EQ(0, std::memcmp(&scores[r], &full[r], sizeof(double))) << "row " << r << ": " << scores[r] << " != " << full[r];
  }
  // The members' bounds combine into bounds that prune: most rows leave early.
  if (num_groups == 1) {
    EXPECT_LT(kept_rows, n / 4);
    EXPECT_LT(selector.trees_evaluated(), selector.trees_in_full() * 3 / 4);
  }
}

TEST_P(EnsembleTopKTest, KeepsEveryRowOfEachGroupsTopKWithTheProgramsBits) {
  const auto& [combine, transforms, weights, k, descending, num_groups] = GetParam();
  ExpectEachGroupsTopK(Ensemble(TrainedMembers().models, weights, combine, transforms), k, descending, num_groups);
}

const Transform kExpm1{EnsembleTransform::kExpm1, 0, 0};
const Transform kExp{EnsembleTransform::kExp, 0, 0};
const Transform kSigmoid{EnsembleTransform::kSigmoid, 0, 0};
const Transform kClip{EnsembleTransform::kClip, 0.2, 0.8};
const std::vector<double> kWeights{0.5, 0.3, 0.2};

INSTANTIATE_TEST_SUITE_P(
    CombinesAndTransforms, EnsembleTopKTest,
    ::testing::Values(Case{Combine::kSum, {}, kWeights, 20, true, 1},
                      Case{Combine::kMean, {}, kWeights, 20, false, 1},
                      Case{Combine::kMean, {kExpm1}, {1.0, 0.0, 2.0}, 10, true, 1},
                      Case{Combine::kMin, {}, kWeights, 15, true, 1},
                      Case{Combine::kMax, {kExp}, kWeights, 15, false, 1},
                      Case{Combine::kMedian, {}, kWeights, 30, true, 1},
                      Case{Combine::kSum, {kSigmoid, kClip}, kWeights, 25, true, 1},
                      Case{Combine::kSum, {kSigmoid, kClip}, kWeights, 25, false, 1},
                      Case{Combine::kMean, {}, kWeights, 5, true, 9},
                      Case{Combine::kMedian, {kExpm1}, {2.0, 1.0, 1.0}, 3, false, 4}));

// An ensemble of an ensemble: the mean of the first two members, through expm1, weighted with
// the third member and (shared with the inner ensemble, so scored once) the first.
Program Nested(const std::vector<std::shared_ptr<const Predictor>>& models, std::vector<double> inner_weights,
               std::vector<double> outer_weights, Combine outer) {
  std::vector<ProgramNode> nodes;
  nodes.push_back(ModelNode{models[0], PredictKind::kPrediction, {0, 1, 2, 3, 4}});
  nodes.push_back(ModelNode{models[1], PredictKind::kPrediction, {5, 1, 0, 3, 2}});
  nodes.push_back(ModelNode{models[2], PredictKind::kRaw, {2, 3, 4, 5, 0}});
  nodes.push_back(EnsembleNode{{0, 1}, std::move(inner_weights), Combine::kMean, {kExpm1}});
  nodes.push_back(EnsembleNode{{3, 2, 0}, std::move(outer_weights), outer, {}});
  return Program(std::move(nodes), kInputs, 0);
}

TEST(EnsembleTopK, KeepsEachGroupsTopKOfANestedEnsembleWithTheProgramsBits) {
  const auto& models = TrainedMembers().models;
  const Program nested = Nested(models, {0.5, 0.5}, {1.0, 0.3, 0.2}, Combine::kSum);
  TopKSelector selector(RankedScore(nested, 7), TopKQuery{10, true});
  EXPECT_EQ(3 * 6, selector.num_stages());  // the shared member is one: three members of 40 trees in 6 stages
  for (const bool descending : {true, false}) {
    ExpectEachGroupsTopK(Nested(models, {0.5, 0.5}, {1.0, 0.3, 0.2}, Combine::kSum), 10, descending, 1);
    ExpectEachGroupsTopK(Nested(models, {0.7, 0.3}, {0.5, 1.0, 0.0}, Combine::kMax), 4, descending, 5);
  }
  ExpectEachGroupsTopK(Nested(models, {0.5, 0.5}, {2.0, 1.0, 1.0}, Combine::kMedian), 15, true, 1);
}

// A route at the root (slot 0) to the first member, the second and an ensemble of the second and
// third.
Program RouteAtRoot(const std::vector<std::shared_ptr<const Predictor>>& models) {
  std::vector<ProgramNode> nodes;
  nodes.push_back(ModelNode{models[0], PredictKind::kPrediction, {0, 1, 2, 3, 4}});
  nodes.push_back(ModelNode{models[1], PredictKind::kPrediction, {5, 1, 0, 3, 2}});
  nodes.push_back(ModelNode{models[2], PredictKind::kRaw, {2, 3, 4, 5, 0}});
  nodes.push_back(EnsembleNode{{1, 2}, {0.5, 0.5}, Combine::kMax, {}});
  nodes.push_back(RouteNode{0, {0, 1, 3}});
  return Program(std::move(nodes), kInputs, 2);
}

// A route to one model reading three orders of the columns: outputs on one scale, so that each
// route's rows compete for the top, and a bound taken from the wrong part would drop some.
Program RouteOfOneModel(const std::shared_ptr<const Predictor>& model) {
  std::vector<ProgramNode> nodes;
  nodes.push_back(ModelNode{model, PredictKind::kPrediction, {0, 1, 2, 3, 4}});
  nodes.push_back(ModelNode{model, PredictKind::kPrediction, {5, 1, 0, 3, 2}});
  nodes.push_back(ModelNode{model, PredictKind::kPrediction, {2, 3, 4, 5, 0}});
  nodes.push_back(RouteNode{0, {0, 1, 2}});
  return Program(std::move(nodes), kInputs, 1);
}

// An ensemble, through a sigmoid, of a route (slot 1) to the first or third member and of the
// second member.
Program RouteInside(const std::vector<std::shared_ptr<const Predictor>>& models) {
  std::vector<ProgramNode> nodes;
  nodes.push_back(ModelNode{models[0], PredictKind::kPrediction, {0, 1, 2, 3, 4}});
  nodes.push_back(ModelNode{models[1], PredictKind::kPrediction, {5, 1, 0, 3, 2}});
  nodes.push_back(ModelNode{models[2], PredictKind::kRaw, {2, 3, 4, 5, 0}});
  nodes.push_back(RouteNode{1, {0, 2}});
  nodes.push_back(EnsembleNode{{3, 1}, {0.6, 0.4}, Combine::kSum, {kSigmoid}});
  return Program(std::move(nodes), kInputs, 2);
}

TEST(EnsembleTopK, KeepsEachGroupsTopKThroughRoutesScoringOnlyTheMembersTheyPick) {
  const auto& models = TrainedMembers().models;
  const std::vector<int32_t> routes = RouteIndices(2, 3, 17);
  for (const bool descending : {true, false}) {
    ExpectEachGroupsTopK(RouteAtRoot(models), 10, descending, 1, routes);
    ExpectEachGroupsTopK(RouteAtRoot(models), 3, descending, 6, routes);
    ExpectEachGroupsTopK(RouteInside(models), 12, descending, 1, RouteIndices(2, 2, 18));
    ExpectEachGroupsTopK(RouteOfOneModel(models[0]), 20, descending, 1, RouteIndices(1, 3, 19));
    ExpectEachGroupsTopK(RouteOfOneModel(models[1]), 5, descending, 4, RouteIndices(1, 3, 20));
  }
  // A full score of a row routed to one member evaluates that member's trees only, and so does
  // selection: no row runs a member its route does not pick.
  const Program routed = RouteAtRoot(models);
  TopKSelector selector(RankedScore(routed), TopKQuery{kRows, true});
  const std::vector<double> inputs = Inputs(kRows, 41);
  const RowMajor matrix(inputs.data(), kRows, kInputs);
  std::vector<int32_t> kept(kRows);
  std::vector<double> scores(kRows);
  EXPECT_EQ(kRows, selector.Select(matrix.batch(), nullptr, -INFINITY, kept.data(), scores.data(), routes.data()));
  int64_t picked_trees = 0;
  for (int r = 0; r < kRows; ++r) {
    const int32_t route = routes[static_cast<size_t>(r) * 2];
    picked_trees += route < 0 ? 0 : route < 2 ? 40 : 80;
  }
  EXPECT_EQ(picked_trees, selector.trees_in_full());
  EXPECT_EQ(picked_trees, selector.trees_evaluated());  // k = every row: every picked tree runs, no other
  EXPECT_THROW(selector.Select(matrix.batch(), nullptr, -INFINITY, kept.data(), scores.data()), std::invalid_argument);
  std::vector<int32_t> out_of_range(routes);
  out_of_range[0] = 3;
  EXPECT_THROW(selector.Select(matrix.batch(), nullptr, -INFINITY, kept.data(), scores.data(), out_of_range.data()),
               std::invalid_argument);
}

TEST(EnsembleTopK, ScoresEveryRowWhereAWeightedOutputCouldBeInfinite) {
  // 1e308 times an output above 1 overflows: no bound orders an infinite sum, so nothing is dropped.
  const Program program = Ensemble(TrainedMembers().models, {1e308, 1.0, 1.0}, Combine::kSum, {});
  TopKSelector selector(RankedScore(program), TopKQuery{5, true});
  EXPECT_FALSE(selector.boundable());
  const int n = 3000;
  const std::vector<double> inputs = Inputs(n, 5);
  const RowMajor matrix(inputs.data(), n, kInputs);
  std::vector<double> full(static_cast<size_t>(n));
  program.Evaluate(matrix.batch(), n, nullptr, 1, GridPoints{}, 0, 1, full.data());
  test_checks::ExpectEveryRowKeptWithItsScore(&selector, matrix.batch(), full);
}

TEST(EnsembleTopK, RefusesWhatItCannotBound) {
  const auto& models = TrainedMembers().models;
  EXPECT_THROW(RankedScore(Ensemble(models, {0.5, -0.1, 0.6}, Combine::kSum, {})),
               std::invalid_argument);
  // A cascade at the root, an ensemble with a cascade among its members, and a route to one.
  const ModelNode first{models[0], PredictKind::kPrediction, {0, 1, 2, 3, 4}};
  const ModelNode second{models[1], PredictKind::kPrediction, {5, 1, 0, 3, 2}};
  std::vector<ProgramNode> cascade{first, second, CascadeNode{0, 1, 0.2, 0.8}};
  EXPECT_THROW(RankedScore(Program(std::move(cascade), kInputs, 0)), std::invalid_argument);
  std::vector<ProgramNode> in_ensemble{first, second, CascadeNode{0, 1, 0.2, 0.8}, EnsembleNode{{0, 2}, {1.0, 1.0}, Combine::kSum, {}}};
  EXPECT_THROW(RankedScore(Program(std::move(in_ensemble), kInputs, 0)), std::invalid_argument);
  std::vector<ProgramNode> routed{first, second, CascadeNode{0, 1, 0.2, 0.8}, RouteNode{0, {1, 2}}};
  EXPECT_THROW(RankedScore(Program(std::move(routed), kInputs, 1)), std::invalid_argument);
  // A negative weight inside a nested ensemble, and inside an ensemble a route picks.
  EXPECT_THROW(RankedScore(Nested(models, {0.5, -0.5}, {1.0, 0.3, 0.2}, Combine::kSum)),
               std::invalid_argument);
  std::vector<ProgramNode> negative{first, second, EnsembleNode{{0, 1}, {1.0, -1.0}, Combine::kSum, {}}, RouteNode{0, {0, 2}}};
  EXPECT_THROW(RankedScore(Program(std::move(negative), kInputs, 1)), std::invalid_argument);
  // A member on LightGBM's predictor.
  auto lightgbm = std::make_shared<Booster>(Booster::FromModelText(Train("regression", 1)));
  std::vector<ProgramNode> mixed{ModelNode{lightgbm, PredictKind::kPrediction, {0, 1, 2, 3, 4}},
                                 EnsembleNode{{0}, {1.0}, Combine::kSum, {}}};
  EXPECT_THROW(RankedScore(Program(std::move(mixed), kInputs, 0)), std::invalid_argument);
}

}  // namespace
}  // namespace treescore
