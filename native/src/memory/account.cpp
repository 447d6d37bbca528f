#include "memory/account.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace treescore::memory {
namespace {

// Before every block: what it was charged, to which kind, and where malloc's block starts.
struct alignas(16) Header {
  uint64_t bytes;   // the caller's bytes plus the offset
  uint32_t kind;
  uint32_t offset;  // from malloc's block to the caller's bytes: the header, or the alignment
};
static_assert(sizeof(Header) == 16, "the header keeps malloc's 16-byte alignment");

// Zero before any code runs (static storage, trivial types), so allocations made while the
// library initialises are counted as well.
std::atomic<int64_t> held_bytes[kKinds];
std::atomic<int64_t> total_bytes;
std::atomic<int64_t> peak_bytes;

thread_local Kind thread_kind = Kind::kWorking;
thread_local int64_t thread_net_bytes = 0;
thread_local int64_t thread_seen_peak = 0;

void Add(uint32_t kind, int64_t bytes) {
  held_bytes[kind].fetch_add(bytes, std::memory_order_relaxed);
  const int64_t total = total_bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  int64_t peak = peak_bytes.load(std::memory_order_relaxed);
  while (total > peak && !peak_bytes.compare_exchange_weak(peak, total, std::memory_order_relaxed)) {
  }
  if (total > thread_seen_peak) thread_seen_peak = total;
  thread_net_bytes += bytes;
}

void Take(uint32_t kind, int64_t bytes) {
  held_bytes[kind].fetch_sub(bytes, std::memory_order_relaxed);
  total_bytes.fetch_sub(bytes, std::memory_order_relaxed);
  thread_net_bytes -= bytes;
}

// Null where malloc has no memory to give.
void* Allocate(size_t size, size_t alignment) noexcept {
  const size_t offset = alignment > sizeof(Header) ? alignment : sizeof(Header);
  if (size > SIZE_MAX - offset) return nullptr;
  void* block = nullptr;
  if (alignment > alignof(std::max_align_t)) {
    if (posix_memalign(&block, alignment, offset + size) != 0) return nullptr;
  } else {
    block = std::malloc(offset + size);
    if (block == nullptr) return nullptr;
  }
  char* user = static_cast<char*>(block) + offset;
  Header* header = reinterpret_cast<Header*>(user) - 1;
  header->bytes = offset + size;
  header->kind = static_cast<uint32_t>(thread_kind);
  header->offset = static_cast<uint32_t>(offset);
  Add(header->kind, static_cast<int64_t>(header->bytes));
  return user;
}

void Free(void* user) noexcept {
  if (user == nullptr) return;
  const Header* header = static_cast<const Header*>(user) - 1;
  Take(header->kind, static_cast<int64_t>(header->bytes));
  std::free(static_cast<char*>(user) - header->offset);
}

// operator new's contract: ask the new-handler for room until it gives up, then throw.
void* AllocateOrThrow(size_t size, size_t alignment) {
  for (;;) {
    if (void* user = Allocate(size, alignment)) return user;
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

void* AllocateOrNull(size_t size, size_t alignment) noexcept {
  try {
    return AllocateOrThrow(size, alignment);
  } catch (...) {
    return nullptr;
  }
}

}  // namespace

int64_t Totals::total() const {
  int64_t sum = 0;
  for (int64_t bytes : held) sum += bytes;
  return sum;
}

Totals Read() {
  Totals totals;
  for (int kind = 0; kind < kKinds; ++kind) totals.held[kind] = held_bytes[kind].load(std::memory_order_relaxed);
  totals.peak = peak_bytes.load(std::memory_order_relaxed);
  return totals;
}

int64_t TakeThreadPeak() {
  const int64_t now = total_bytes.load(std::memory_order_relaxed);
  const int64_t seen = thread_seen_peak > now ? thread_seen_peak : now;
  thread_seen_peak = 0;
  return seen;
}

Charge::Charge(Kind kind) : previous_(thread_kind), start_(thread_net_bytes) { thread_kind = kind; }

Charge::~Charge() { thread_kind = previous_; }

int64_t Charge::net_bytes() const { return thread_net_bytes - start_; }

void* AllocateBuffer(size_t bytes) {
  Charge charge(Kind::kBuffers);
  return AllocateOrThrow(bytes, alignof(std::max_align_t));
}

void FreeBuffer(void* buffer) noexcept { Free(buffer); }

}  // namespace treescore::memory

// Every form of operator new and delete, so that no block reaches a default one that does not
// know the header. The libraries' export maps keep these inside each library.
using treescore::memory::AllocateOrNull;
using treescore::memory::AllocateOrThrow;
using treescore::memory::Free;
namespace {
constexpr size_t kDefault = __STDCPP_DEFAULT_NEW_ALIGNMENT__;
size_t Aligned(std::align_val_t alignment) { return static_cast<size_t>(alignment); }
}  // namespace

void* operator new(size_t size) { return AllocateOrThrow(size, kDefault); }
void* operator new[](size_t size) { return AllocateOrThrow(size, kDefault); }
void* operator new(size_t size, const std::nothrow_t&) noexcept { return AllocateOrNull(size, kDefault); }
void* operator new[](size_t size, const std::nothrow_t&) noexcept { return AllocateOrNull(size, kDefault); }
void* operator new(size_t size, std::align_val_t alignment) { return AllocateOrThrow(size, Aligned(alignment)); }
void* operator new[](size_t size, std::align_val_t alignment) { return AllocateOrThrow(size, Aligned(alignment)); }
void* operator new(size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  return AllocateOrNull(size, Aligned(alignment));
}
void* operator new[](size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  return AllocateOrNull(size, Aligned(alignment));
}

void operator delete(void* user) noexcept { Free(user); }
void operator delete[](void* user) noexcept { Free(user); }
void operator delete(void* user, const std::nothrow_t&) noexcept { Free(user); }
void operator delete[](void* user, const std::nothrow_t&) noexcept { Free(user); }
void operator delete(void* user, size_t) noexcept { Free(user); }
void operator delete[](void* user, size_t) noexcept { Free(user); }
void operator delete(void* user, std::align_val_t) noexcept { Free(user); }
void operator delete[](void* user, std::align_val_t) noexcept { Free(user); }
void operator delete(void* user, std::align_val_t, const std::nothrow_t&) noexcept { Free(user); }
void operator delete[](void* user, std::align_val_t, const std::nothrow_t&) noexcept { Free(user); }
void operator delete(void* user, size_t, std::align_val_t) noexcept { Free(user); }
void operator delete[](void* user, size_t, std::align_val_t) noexcept { Free(user); }
