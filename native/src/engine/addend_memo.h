// The addends of a tree's replayed leaves, by leaf and hot pattern, as the rows of a block
// compute them. A leaf's addends depend on the row only through its pattern, so rows that share
// one share the same bits, and every row after the first takes them from here rather than
// replaying the path. Deep leaves repeat their patterns often: on the bench's 100 x 255-leaf
// model, a 2,000-row block has about one distinct pattern per five (leaf, row) pairs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "memory/working_memory.h"

namespace treescore {
namespace engine {

class AddendMemo {
 public:
  // A memo that holds at most about max_bytes, its addends and the table that finds them
  // (Bytes): past that, Insert keeps storage without an entry, and a caller whose pass of rows
  // would outgrow the room clears it first (Fits). Only a pass that alone needs more addends
  // than the room takes more: Reserve always makes room for what was asked.
  explicit AddendMemo(size_t max_bytes = kDefaultBytes);
  // The least TreeSHAP's block leaves it (memory/working_memory.h).
  static constexpr size_t kDefaultBytes = static_cast<size_t>(memory::kShapBytes - memory::kShapBlockMostBytes);
  // Forgets every entry, keeping the storage.
  void Clear();
  // Whether `addends` more fit the room without a Clear.
  bool Fits(size_t addends) const { return values_.size() + addends <= value_room_; }
  // Makes room for `addends` more addends, so that the pointers Find and Insert return stay valid
  // until the next Clear or Reserve. Storage is taken once, the whole room at a time.
  void Reserve(size_t addends);
  // Addends held.
  size_t size() const { return values_.size(); }
  // Bytes of storage held: what the room allows, or one larger pass.
  size_t Bytes() const { return values_.capacity() * sizeof(double) + entries_.capacity() * sizeof(Entry); }
  // The addends of `leaf` at `pattern`, or null when none are kept.
  const double* Find(int32_t leaf, uint64_t pattern) const;
  // Storage for the `count` addends of `leaf` at `pattern`, which Find does not have; the caller
  // fills it, and Find gives it back unless the table was full. Reserve must have made room.
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
  size_t max_entries_ = 0;      // the longest entries_ grows (a power of two)
  size_t value_room_ = 0;       // the addends values_ holds without outgrowing the room
  size_t used_ = 0;
  std::vector<double> values_;
};

}  // namespace engine
}  // namespace treescore
