// The ensemble program the JVM sends, as the flat encoding ProgramEncoding.scala writes.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "program/program.h"

namespace treescore {

// Decodes the flat encoding the JVM sends (see ProgramEncoding.scala) and checks every index,
// so a malformed program is an exception, never an out-of-bounds read.
//   code:      num_inputs, num_route_slots, num_nodes, then per node:
//              0 model:    model_slot, kind, num_columns, columns...
//              1 ensemble: combine, num_members, members..., num_transforms, transform types...
//              2 route:    slot, num_routes, routes...
//              3 cascade:  first, full
//   constants: per ensemble its weights then (lo, hi) per transform; per cascade (below, above)
Program DecodeProgram(const std::vector<int64_t>& code, const std::vector<double>& constants,
                      const std::vector<std::shared_ptr<const Predictor>>& models);

}  // namespace treescore
