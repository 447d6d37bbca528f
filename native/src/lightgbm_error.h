// Turns LightGBM's C error codes into C++ exceptions, so that every binding has one
// error path to translate (JNI into a Java exception, pybind11 into a Python one).
#pragma once

#include <stdexcept>
#include <string>

namespace treescore {

// An error reported by LightGBM itself, carrying LGBM_GetLastError()'s text.
class LightGbmError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws LightGbmError naming `what` when a LightGBM C API call returned non-zero.
void CheckLightGbm(int return_code, const char* what);

}  // namespace treescore
