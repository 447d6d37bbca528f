#include "lightgbm_error.h"

#include <LightGBM/c_api.h>

namespace treescore {

void CheckLightGbm(int return_code, const char* what) {
  if (return_code != 0) {
    // LGBM_GetLastError is thread-local in LightGBM, so this reads this call's own error.
    throw LightGbmError(std::string(what) + " failed: " + LGBM_GetLastError());
  }
}

}  // namespace treescore
