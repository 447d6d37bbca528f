// Trains models with LightGBM's own C API, so the native tests need no model files.
#pragma once

#include <LightGBM/c_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "../src/lightgbm_error.h"

namespace treescore {
namespace test_models {

// A booster trained for `iterations` rounds on row-major `features` (labels.size() rows of `cols`).
// The caller frees it with LGBM_BoosterFree.
inline BoosterHandle Train(const std::vector<double>& features, const std::vector<float>& labels, int cols,
                           const std::string& dataset_params, const std::string& booster_params, int iterations) {
  const auto rows = static_cast<int32_t>(labels.size());
  DatasetHandle dataset = nullptr;
  CheckLightGbm(LGBM_DatasetCreateFromMat(features.data(), C_API_DTYPE_FLOAT64, rows, cols, 1, dataset_params.c_str(),
                                          nullptr, &dataset), "create dataset");
  CheckLightGbm(LGBM_DatasetSetField(dataset, "label", labels.data(), rows, C_API_DTYPE_FLOAT32), "label");
  BoosterHandle booster = nullptr;
  CheckLightGbm(LGBM_BoosterCreate(dataset, booster_params.c_str(), &booster), "create booster");
  for (int i = 0; i < iterations; ++i) {
    int finished = 0;
    CheckLightGbm(LGBM_BoosterUpdateOneIter(booster, &finished), "train");
  }
  LGBM_DatasetFree(dataset);
  return booster;
}

// The booster's model in LightGBM's text format.
inline std::string ModelText(BoosterHandle booster) {
  int64_t length = 0;
  std::vector<char> buffer(1 << 20);
  CheckLightGbm(LGBM_BoosterSaveModelToString(booster, 0, -1, C_API_FEATURE_IMPORTANCE_SPLIT,
                                              static_cast<int64_t>(buffer.size()), &length, buffer.data()), "save");
  if (length > static_cast<int64_t>(buffer.size())) {  // LightGBM said how much it needs: ask again
    buffer.resize(static_cast<size_t>(length));
    CheckLightGbm(LGBM_BoosterSaveModelToString(booster, 0, -1, C_API_FEATURE_IMPORTANCE_SPLIT, length, &length,
                                                buffer.data()), "save");
  }
  return std::string(buffer.data());
}

}  // namespace test_models
}  // namespace treescore
