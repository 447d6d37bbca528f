// Top-K selection over an ensemble program: the program's ensembles and routes (the root and
// any nested in it) and their member models, read as the selector's, so that the selector scores
// them as Program::Evaluate does.
#pragma once

#include "engine/top_k.h"
#include "program.h"

namespace treescore {

// A selector ranking `program`'s scores: a weighted ensemble (any combine rule, any transforms,
// weights of 0 or more) or a route, whose parts are models on treescore's engine, each scoring
// its prediction or raw margin, and ensembles and routes of the same kind. Select then takes the
// program's route indices. The program must outlive the selector. Anything else (a cascade, a
// member on LightGBM's predictor) throws std::invalid_argument, naming what it found.
engine::TopKSelector TopKSelectorFor(const Program& program, engine::TopKQuery query, int trees_per_stage = 0);

}  // namespace treescore
