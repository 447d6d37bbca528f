// Top-K selection over an ensemble program: the program's ensembles (the root and any nested
// in it) and their member models, read as the selector's, so that the selector scores them as
// Program::Evaluate does.
#pragma once

#include "engine/top_k.h"
#include "program.h"

namespace treescore {

// A selector ranking `program`'s scores, which must be a weighted ensemble (any combine rule,
// any transforms, weights of 0 or more) whose members are models on treescore's engine, each
// scoring its prediction or raw margin, or ensembles of the same kind. The program must outlive the selector. Anything else
// throws std::invalid_argument, naming what it found.
engine::TopKSelector TopKSelectorFor(const Program& program, engine::TopKQuery query, int trees_per_stage = 0);

}  // namespace treescore
