// One account of the native memory treescore holds in this process, by what it is for.
//
// Every C++ allocation made by code linked into a treescore library is counted where it is
// made (account.cpp replaces operator new and delete there, hidden inside the library): its
// bytes are charged to the kind the allocating thread is working for, and given back to that
// kind when freed, on whatever thread. The JVM's task buffers are allocated here as well
// (AllocateBuffer), so that one account holds everything.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "wire_codes.h"

namespace treescore::memory {

using Kind = wire::NativeMemory;
constexpr int kKinds = wire::kNativeMemoryLast + 1;

// Bytes held right now per kind (indexed by code), and the most ever held at once in total.
struct Totals {
  std::array<int64_t, kKinds> held{};
  int64_t peak = 0;
  int64_t total() const;
};
Totals Read();

// The most held in total that this thread's allocations saw since it last called this (or since
// it began), or the total now if more; starts the next watch. A task's thread calls it when it
// starts and when it ends to learn the peak of its time, working memory of its calls included.
int64_t TakeThreadPeak();

// While one lives, allocations on its thread are charged to its kind; it also measures what
// they keep. Scopes nest: the innermost kind applies.
class Charge {
 public:
  explicit Charge(Kind kind);
  ~Charge();
  Charge(const Charge&) = delete;
  Charge& operator=(const Charge&) = delete;

  // Bytes this thread allocated since the scope began, less what it freed since.
  int64_t net_bytes() const;

 private:
  Kind previous_;
  int64_t start_;
};

// A buffer of `bytes` bytes charged to Kind::kBuffers, aligned as malloc aligns; throws
// std::bad_alloc. FreeBuffer takes what AllocateBuffer gave (null is ignored).
void* AllocateBuffer(size_t bytes);
void FreeBuffer(void* buffer) noexcept;

}  // namespace treescore::memory
