#include "simd.h"

#include <stdexcept>

#if defined(__x86_64__)
#include <cpuid.h>

#include <cstdint>
#endif

namespace treescore {
namespace engine {
namespace {

#if defined(__x86_64__)
// The register state the OS saves on a context switch (XCR0), read with xgetbv.
uint64_t SavedRegisterState() {
  uint32_t low = 0, high = 0;
  __asm__("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
  return (static_cast<uint64_t>(high) << 32) | low;
}

Simd Detect() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return Simd::kBaseline;
  const bool os_saves = (ecx & bit_OSXSAVE) != 0;
  if (!os_saves || !__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return Simd::kBaseline;
  const uint64_t state = SavedRegisterState();
  const uint64_t ymm = 0x6, zmm = 0xe0;  // XMM and YMM; then opmask, upper ZMM and ZMM16-31
  const bool avx2 = (ebx & bit_AVX2) != 0 && (state & ymm) == ymm;
  const bool avx512 = avx2 && (ebx & bit_AVX512F) != 0 && (state & zmm) == zmm;
  return avx512 ? Simd::kAvx512 : avx2 ? Simd::kAvx2 : Simd::kBaseline;
}
#else
Simd Detect() { return Simd::kBaseline; }
#endif

}  // namespace

Simd BestSimd() {
  static const Simd best = Detect();
  return best;
}

std::vector<Simd> SimdLevelsUpTo(Simd best) {
  std::vector<Simd> levels;
  for (Simd level : {Simd::kBaseline, Simd::kAvx2, Simd::kAvx512}) {
    if (level <= best) levels.push_back(level);
  }
  return levels;
}

std::string SimdName(Simd simd) {
  switch (simd) {
    case Simd::kAvx512:
      return "avx512";
    case Simd::kAvx2:
      return "avx2";
    case Simd::kBaseline:
      break;
  }
  return "baseline";
}

Simd ParseSimd(const std::string& name) {
  std::string names;
  for (Simd level : SimdLevelsUpTo(Simd::kAvx512)) {
    if (SimdName(level) == name) return level;
    names += (names.empty() ? "" : ", ") + SimdName(level);
  }
  throw std::invalid_argument("unknown SIMD level '" + name + "'; expected one of " + names);
}

void RequireSimd(Simd wanted, Simd best) {
  if (wanted > best) {
    throw std::invalid_argument("this CPU cannot run the engine's " + SimdName(wanted) + " code; the best it runs is " +
                                SimdName(best));
  }
}

}  // namespace engine
}  // namespace treescore
