// How far top-K selection moves a bound past a transform computed by libm, so that bounds stay
// bounds: exp, log1p and division are each within an ulp of a nondecreasing function, so
// nearby raw scores never swap by more than a few ulps.
#pragma once

#include <cmath>
#include <limits>

namespace treescore {

constexpr int kTransformUlps = 4;

// `value` moved kTransformUlps ulps up (up = true) or down.
inline double WidenedPastTransform(double value, bool up) {
  const double direction = up ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  for (int i = 0; i < kTransformUlps; ++i) value = std::nextafter(value, direction);
  return value;
}

}  // namespace treescore
