// How an ensemble turns its members' outputs into one score (docs/spec-format.md, "Order of
// operations"): each output times its weight, combined, then transformed. Ensemble programs
// and top-K selection over an ensemble both score through these functions, so they agree bit
// for bit; they are compiled once, with the engine's exact floating-point flags.
#pragma once

#include <vector>

#include "wire_codes.h"

namespace treescore {

using wire::Combine;
using wire::EnsembleTransform;

// Output transforms, applied in order after combining: e.g. expm1 then clip(0, +inf).
struct Transform {
  EnsembleTransform type = EnsembleTransform::kIdentity;
  double lo = 0;  // clip bounds; NaN-free, lo <= hi
  double hi = 0;
};

// The weights added in member order from 0.0: what a mean divides by.
double WeightSum(const std::vector<double>& weights);

// One row's weighted member outputs combined: sum in member order; mean = that sum /
// weight_sum; min, max, median (of an even count: the mean of the middle two). `scratch` is
// reused across rows for the median.
double CombineRow(Combine combine, const std::vector<double>& weighted, double weight_sum, std::vector<double>* scratch);

// `value` through the transforms in order, with the C library's exp and expm1.
double ApplyTransform(double value, const Transform& transform);
double ApplyTransforms(double value, const std::vector<Transform>& transforms);

// Whether a transform's result is computed exactly from a nondecreasing function of its input
// (identity, clip); the others are within an ulp of one (exp, expm1, sigmoid).
bool ExactlyMonotone(const Transform& transform);

}  // namespace treescore
