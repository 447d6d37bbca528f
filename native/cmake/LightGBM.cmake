# Provides the imported target LightGBM::lightgbm: the pinned release's C API headers and its
# static library, built from the PyPI sdist by this build's own toolchain for this target
# (build/fetch_lightgbm.py says why static, and why without OpenMP).

file(STRINGS "${CMAKE_CURRENT_LIST_DIR}/../LIGHTGBM_VERSION" TREESCORE_LIGHTGBM_VERSION LIMIT_COUNT 1)
# The same folder build/pypi_download.py uses: $TREESCORE_CACHE_DIR, else ~/.cache/treescore.
if(DEFINED ENV{TREESCORE_CACHE_DIR} AND NOT "$ENV{TREESCORE_CACHE_DIR}" STREQUAL "")
  set(TREESCORE_CACHE_DIR_DEFAULT "$ENV{TREESCORE_CACHE_DIR}")
else()
  set(TREESCORE_CACHE_DIR_DEFAULT "$ENV{HOME}/.cache/treescore")
endif()
set(TREESCORE_CACHE_DIR "${TREESCORE_CACHE_DIR_DEFAULT}" CACHE PATH "Where downloaded third-party releases are kept")
# Not cached: a build folder configured before a change here must not keep the old location.
set(LIGHTGBM_ROOT "${TREESCORE_CACHE_DIR}/lightgbm-${TREESCORE_LIGHTGBM_VERSION}-static-${TREESCORE_TARGET}")

execute_process(
  COMMAND "${TREESCORE_SCRIPT_PYTHON}" "${CMAKE_CURRENT_LIST_DIR}/../../build/fetch_lightgbm.py"
          "${TREESCORE_LIGHTGBM_VERSION}" "${TREESCORE_TARGET}" "${LIGHTGBM_ROOT}"
  RESULT_VARIABLE fetch_result)
if(NOT fetch_result EQUAL 0)
  message(FATAL_ERROR "Could not build LightGBM ${TREESCORE_LIGHTGBM_VERSION} for ${TREESCORE_TARGET} into ${LIGHTGBM_ROOT}")
endif()

add_library(LightGBM::nanoarrow STATIC IMPORTED GLOBAL)
set_target_properties(LightGBM::nanoarrow PROPERTIES IMPORTED_LOCATION "${LIGHTGBM_ROOT}/lib/libnanoarrow_static.a")
add_library(LightGBM::lightgbm STATIC IMPORTED GLOBAL)
set_target_properties(LightGBM::lightgbm PROPERTIES
  IMPORTED_LOCATION "${LIGHTGBM_ROOT}/lib/lib_lightgbm.a"
  INTERFACE_INCLUDE_DIRECTORIES "${LIGHTGBM_ROOT}/include"
  INTERFACE_LINK_LIBRARIES LightGBM::nanoarrow)
