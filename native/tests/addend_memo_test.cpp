// The memo of replayed leaves' addends: what it keeps it gives back under the same leaf and
// pattern only, through growth and collisions, and it forgets everything when cleared.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "../src/engine/addend_memo.h"

namespace treescore {
namespace {

TEST(AddendMemoTest, GivesBackWhatItKeptUnderTheSameLeafAndPatternOnly) {
  engine::AddendMemo memo;
  EXPECT_EQ(memo.Find(0, 0), nullptr);
  // Enough entries to grow the table several times; patterns that differ in high bits only, and
  // leaves that share patterns, so that slots collide.
  const int kLeaves = 40;
  const int kPatterns = 200;
  memo.Reserve(static_cast<size_t>(kLeaves) * kPatterns * 3);
  for (int leaf = 0; leaf < kLeaves; ++leaf) {
    for (int p = 0; p < kPatterns; ++p) {
      const uint64_t pattern = static_cast<uint64_t>(p) << 40;
      ASSERT_EQ(memo.Find(leaf, pattern), nullptr);
      double* addends = memo.Insert(leaf, pattern, 3);
      for (int e = 0; e < 3; ++e) addends[e] = leaf * 1000.0 + p + e * 0.25;
    }
  }
  EXPECT_EQ(memo.size(), static_cast<size_t>(kLeaves) * kPatterns * 3);
  for (int leaf = 0; leaf < kLeaves; ++leaf) {
    for (int p = 0; p < kPatterns; ++p) {
      const double* addends = memo.Find(leaf, static_cast<uint64_t>(p) << 40);
      ASSERT_NE(addends, nullptr) << leaf << " " << p;
      for (int e = 0; e < 3; ++e) ASSERT_EQ(addends[e], leaf * 1000.0 + p + e * 0.25);
    }
  }
  EXPECT_EQ(memo.Find(kLeaves, 0), nullptr);
  EXPECT_EQ(memo.Find(0, uint64_t{kPatterns} << 40), nullptr);
  EXPECT_EQ(memo.Find(0, 1), nullptr);
  memo.Clear();
  EXPECT_EQ(memo.size(), 0u);
  EXPECT_EQ(memo.Find(1, uint64_t{1} << 40), nullptr);
}

TEST(AddendMemoTest, KeepsStorageWithoutAnEntryAndRefusesWhatWasNotReserved) {
  engine::AddendMemo memo(0);  // no room: Reserve takes what it is asked for, no more
  memo.Reserve(4);
  double* kept = memo.Keep(4);
  kept[3] = 7;
  EXPECT_EQ(memo.size(), 4u);
  EXPECT_EQ(memo.Find(0, 0), nullptr);
  EXPECT_THROW(memo.Keep(1), std::logic_error);
  memo.Reserve(1);
  EXPECT_NE(memo.Insert(0, 0, 1), nullptr);
  EXPECT_EQ(memo.Find(0, 0), memo.Find(0, 0));
  EXPECT_EQ(memo.size(), 5u);
}

// The memo holds at most its room: past it a caller starts again (Fits), and a full table still
// gives storage, which it cannot find again. A pass larger than the room gets what it asks.
TEST(AddendMemoTest, StaysWithinItsRoom) {
  constexpr size_t kRoom = size_t{256} << 10;
  engine::AddendMemo memo(kRoom);
  size_t remembered = 0, forgotten = 0, restarts = 0;
  for (int leaf = 0; leaf < 100000; ++leaf) {
    if (!memo.Fits(2)) {
      memo.Clear();
      ++restarts;
    }
    memo.Reserve(2);
    double* addends = memo.Insert(leaf, 5, 2);
    addends[1] = leaf;
    const double* found = memo.Find(leaf, 5);
    if (found != nullptr) {
      ASSERT_EQ(found, addends);
      ++remembered;
    } else {
      ++forgotten;
    }
    ASSERT_LE(memo.Bytes(), kRoom) << leaf;
  }
  EXPECT_GT(remembered, 0u);
  EXPECT_GT(forgotten, 0u);  // the table filled before the values did
  EXPECT_GT(restarts, 0u);
  memo.Clear();
  memo.Reserve(kRoom);  // a pass of kRoom addends: more than the room, and still given
  EXPECT_NE(memo.Keep(static_cast<int32_t>(kRoom)), nullptr);
  EXPECT_GE(memo.Bytes(), kRoom * sizeof(double));
}

}  // namespace
}  // namespace treescore
