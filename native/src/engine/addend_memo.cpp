#include "engine/addend_memo.h"

#include <algorithm>
#include <stdexcept>

namespace treescore {
namespace engine {

namespace {

// Of the room, the table of entries takes kEntryShare fifths: a replayed leaf keeps about ten
// addends (80 bytes) per entry on a 255-leaf model, and an entry takes 48 bytes at most (below).
constexpr size_t kEntryShare = 2;

size_t PowerOfTwoAtMost(size_t n) {
  size_t power = 1;
  while (power * 2 <= n) power *= 2;
  return power;
}

}  // namespace

AddendMemo::AddendMemo(size_t max_bytes) {
  // An entry's slot, and half that again while the table grows, holding its old half-size table.
  constexpr size_t kEntryBytes = sizeof(Entry) + sizeof(Entry) / 2;
  max_entries_ = std::max<size_t>(1024, PowerOfTwoAtMost(max_bytes / 5 * kEntryShare / kEntryBytes));
  value_room_ = (max_bytes - std::min(max_bytes, max_entries_ * kEntryBytes)) / sizeof(double);
}

void AddendMemo::Clear() {
  std::fill(entries_.begin(), entries_.end(), Entry{0, kEmpty, 0});
  used_ = 0;
  values_.clear();
}

void AddendMemo::Reserve(size_t addends) {
  if (values_.size() + addends > UINT32_MAX) throw std::length_error("addend memo past 2^32 addends");
  if (values_.capacity() < values_.size() + addends) values_.reserve(std::max(value_room_, values_.size() + addends));
}

size_t AddendMemo::Slot(int32_t leaf, uint64_t pattern) const {
  // Patterns of one leaf differ in their low bits, and leaves in their index: mix both into the
  // high bits, which pick the slot.
  uint64_t h = (pattern ^ (static_cast<uint64_t>(leaf) * 0x9E3779B97F4A7C15ULL)) * 0xFF51AFD7ED558CCDULL;
  h ^= h >> 29;
  const size_t mask = entries_.size() - 1;
  size_t slot = static_cast<size_t>(h) & mask;
  while (entries_[slot].leaf != kEmpty && (entries_[slot].leaf != leaf || entries_[slot].pattern != pattern)) {
    slot = (slot + 1) & mask;
  }
  return slot;
}

const double* AddendMemo::Find(int32_t leaf, uint64_t pattern) const {
  if (used_ == 0) return nullptr;
  const Entry& entry = entries_[Slot(leaf, pattern)];
  return entry.leaf == kEmpty ? nullptr : values_.data() + entry.offset;
}

double* AddendMemo::Insert(int32_t leaf, uint64_t pattern, int32_t count) {
  if (2 * (used_ + 1) > entries_.size()) {
    if (entries_.size() >= max_entries_) return Keep(count);
    Grow();
  }
  entries_[Slot(leaf, pattern)] = {pattern, leaf, static_cast<uint32_t>(values_.size())};
  ++used_;
  return Keep(count);
}

double* AddendMemo::Keep(int32_t count) {
  const size_t offset = values_.size();
  if (offset + static_cast<size_t>(count) > values_.capacity()) throw std::logic_error("addend memo not reserved");
  values_.resize(offset + static_cast<size_t>(count));
  return values_.data() + offset;
}

void AddendMemo::Grow() {
  std::vector<Entry> old(std::max<size_t>(1024, 2 * entries_.size()), Entry{0, kEmpty, 0});
  old.swap(entries_);
  for (const Entry& entry : old) {
    if (entry.leaf != kEmpty) entries_[Slot(entry.leaf, entry.pattern)] = entry;
  }
}

}  // namespace engine
}  // namespace treescore
