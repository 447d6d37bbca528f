// Checks shared by the top-K tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "../src/top_k/selector.h"

namespace treescore {
namespace test_checks {

// Selects `all` in two halves and expects every row kept with the bits of `full` (each row's
// full score): a selector that can bound nothing must drop nothing, in the second batch too,
// when its groups' bars are known.
inline void ExpectEveryRowKeptWithItsScore(TopKSelector* selector, const FeatureBatch& all,
                                           const std::vector<double>& full) {
  const int n = all.num_rows;
  std::vector<int32_t> kept(static_cast<size_t>(n));
  std::vector<double> scores(static_cast<size_t>(n));
  for (int b = 0; b < 2; ++b) {
    const int first = b * (n / 2), count = b == 0 ? n / 2 : n - n / 2;
    EXPECT_EQ(count, selector->Select(all.Rows(first, count), nullptr, -INFINITY, kept.data() + first, scores.data() + first));
  }
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(1, kept[static_cast<size_t>(r)]) << "row " << r;
    ASSERT_EQ(0, std::memcmp(&scores[r], &full[r], sizeof(double))) << "row " << r << ": " << scores[r] << " != " << full[r];
  }
}

}  // namespace test_checks
}  // namespace treescore
