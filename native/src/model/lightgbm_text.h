// The loader for LightGBM's model text: the one place native code turns that format into a
// Forest (forest.h). The JVM checks a model's text before any executor loads it
// (ModelText.scala); this loader still refuses any text that would make it read out of bounds or
// walk forever, with std::invalid_argument, because text can reach native code by other ways
// than the JVM's.
#pragma once

#include <string>

#include "forest.h"

namespace treescore {
namespace model {

Forest ReadLightGbmText(const std::string& model_text);

// LightGBM's own decimal reader (Common::Atof) for numbers it writes with %g, such as an
// objective's sigmoid: digits accumulated, then scaled, in LightGBM's order, so a value reads
// back to the same double LightGBM uses, which a correctly rounded strtod does not promise.
double ReadLightGbmDecimal(const std::string& text);

}  // namespace model
}  // namespace treescore
