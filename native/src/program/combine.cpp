#include "program/combine.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace treescore {

double WeightSum(const std::vector<double>& weights) {
  double sum = 0;
  for (double w : weights) sum += w;
  return sum;
}

double CombineRow(Combine combine, const std::vector<double>& weighted, double weight_sum, std::vector<double>* scratch) {
  switch (combine) {
    case Combine::kSum:
    case Combine::kMean: {
      double sum = 0;
      for (double v : weighted) sum += v;  // in member order, as the documented reference does
      return combine == Combine::kSum ? sum : sum / weight_sum;
    }
    case Combine::kMin: return *std::min_element(weighted.begin(), weighted.end());
    case Combine::kMax: return *std::max_element(weighted.begin(), weighted.end());
    case Combine::kMedian: {
      *scratch = weighted;
      std::sort(scratch->begin(), scratch->end());
      const size_t n = scratch->size();
      return n % 2 == 1 ? (*scratch)[n / 2] : ((*scratch)[n / 2 - 1] + (*scratch)[n / 2]) / 2;
    }
  }
  throw std::logic_error("unknown combine rule");
}

double ApplyTransform(double value, const Transform& t) {
  switch (t.type) {
    case EnsembleTransform::kIdentity: return value;
    case EnsembleTransform::kExp: return std::exp(value);
    case EnsembleTransform::kExpm1: return std::expm1(value);
    case EnsembleTransform::kSigmoid: return 1.0 / (1.0 + std::exp(-value));
    case EnsembleTransform::kClip: return std::min(std::max(value, t.lo), t.hi);
  }
  throw std::logic_error("unknown transform");
}

double ApplyTransforms(double value, const std::vector<Transform>& transforms) {
  for (const Transform& t : transforms) value = ApplyTransform(value, t);
  return value;
}

bool ExactlyMonotone(const Transform& transform) {
  return transform.type == EnsembleTransform::kIdentity || transform.type == EnsembleTransform::kClip;
}

}  // namespace treescore
