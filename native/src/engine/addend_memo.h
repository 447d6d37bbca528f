// The addends of a tree's replayed leaves, by leaf and hot pattern, as the rows of a block
// compute them. A leaf's addends depend on the row only through its pattern, so rows that share
// one share the same bits, and every row after the first takes them from here rather than
// replaying the path. Deep leaves repeat their patterns often: on the bench's 100 x 255-leaf
// model, a 2,000-row block has about one distinct pattern per five (leaf, row) pairs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace treescore {
namespace engine {

class AddendMemo {
 public:
  // Forgets every entry, keeping the storage.
  void Clear();
  // Makes room for `addends` more addends, so that the pointers Find and Insert return stay valid
  // until the next Clear or Reserve.
  void Reserve(size_t addends);
  // Addends held.
  size_t size() const { return values_.size(); }

  // The addends of `leaf` at `pattern`, or null when none are kept.
  const double* Find(int32_t leaf, uint64_t pattern) const;
  // Storage for the `count` addends of `leaf` at `pattern`, which Find does not have; the caller
  // fills it. Reserve must have made room for them.
  double* Insert(int32_t leaf, uint64_t pattern, int32_t count);
  // Storage for `count` addends that no later Find will ask for (a leaf too deep for a pattern).
  double* Keep(int32_t count);

 private:
  struct Entry {
    uint64_t pattern;
    int32_t leaf;     // kEmpty where no entry is
    uint32_t offset;  // of its addends in values_
  };
  static constexpr int32_t kEmpty = -1;

  size_t Slot(int32_t leaf, uint64_t pattern) const;
  void Grow();

  std::vector<Entry> entries_;  // open addressing, a power of two long, at most half full
  size_t used_ = 0;
  std::vector<double> values_;
};

}  // namespace engine
}  // namespace treescore
