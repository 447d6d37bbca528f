// The SIMD instruction sets the engine's vector code is compiled for, and the one this CPU runs.
// x86-64 code is compiled for each level, and a scorer runs the best level its CPU has (or a
// lower one where asked, so that tests compare them); every level gives the same bits, since
// that code only compares and ANDs. Other targets (aarch64's NEON) have one level, kBaseline.
#pragma once

#include <string>
#include <vector>

namespace treescore {
namespace engine {

enum class Simd {
  kBaseline,  // the target's baseline: SSE2 on x86-64, NEON on aarch64
  kAvx2,
  kAvx512,    // AVX-512 F
};

// The best level this CPU and its operating system support (AVX registers are usable only where
// the OS saves them), found once.
Simd BestSimd();
// Every level up to `best`, lowest first: the levels a CPU whose best is `best` runs.
std::vector<Simd> SimdLevelsUpTo(Simd best);
// "baseline", "avx2" or "avx512".
std::string SimdName(Simd simd);
// The level SimdName gives `name`; std::invalid_argument naming the choices for any other name.
Simd ParseSimd(const std::string& name);
// std::invalid_argument unless a CPU whose best level is `best` runs `wanted`.
void RequireSimd(Simd wanted, Simd best);

}  // namespace engine
}  // namespace treescore
