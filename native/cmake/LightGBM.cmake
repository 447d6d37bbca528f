# Provides the imported target LightGBM::lightgbm: the pinned release's C API headers and the
# very shared library its PyPI wheel ships (see build/fetch_lightgbm.py for why that library).
# On Linux it also finds the OpenMP runtime that library needs, so both can travel with treescore.

file(STRINGS "${CMAKE_CURRENT_LIST_DIR}/../LIGHTGBM_VERSION" TREESCORE_LIGHTGBM_VERSION LIMIT_COUNT 1)
# The same folder build/pypi_download.py uses: $TREESCORE_CACHE_DIR, else ~/.cache/treescore.
if(DEFINED ENV{TREESCORE_CACHE_DIR} AND NOT "$ENV{TREESCORE_CACHE_DIR}" STREQUAL "")
  set(TREESCORE_CACHE_DIR_DEFAULT "$ENV{TREESCORE_CACHE_DIR}")
else()
  set(TREESCORE_CACHE_DIR_DEFAULT "$ENV{HOME}/.cache/treescore")
endif()
set(TREESCORE_CACHE_DIR "${TREESCORE_CACHE_DIR_DEFAULT}" CACHE PATH "Where downloaded third-party releases are kept")
# "-own-soname": the library is kept as libtreescore_lightgbm (build/fetch_lightgbm.py says why);
# a cache from before that renaming holds lib_lightgbm and is not reused.
# Not cached: a build folder configured before a change here must not keep the old location.
set(LIGHTGBM_ROOT "${TREESCORE_CACHE_DIR}/lightgbm-${TREESCORE_LIGHTGBM_VERSION}-own-soname-${CMAKE_SYSTEM_NAME}-${CMAKE_SYSTEM_PROCESSOR}")

find_package(Python3 REQUIRED COMPONENTS Interpreter)
execute_process(
  COMMAND "${Python3_EXECUTABLE}" "${CMAKE_CURRENT_LIST_DIR}/../../build/fetch_lightgbm.py" "${TREESCORE_LIGHTGBM_VERSION}" "${LIGHTGBM_ROOT}"
  RESULT_VARIABLE fetch_result)
if(NOT fetch_result EQUAL 0)
  message(FATAL_ERROR "Could not fetch LightGBM ${TREESCORE_LIGHTGBM_VERSION} with pip into ${LIGHTGBM_ROOT}")
endif()

find_library(TREESCORE_LIGHTGBM_LIBRARY NAMES treescore_lightgbm PATHS "${LIGHTGBM_ROOT}/lib" NO_DEFAULT_PATH REQUIRED)
set(LIGHTGBM_LIBRARY "${TREESCORE_LIGHTGBM_LIBRARY}")
add_library(LightGBM::lightgbm SHARED IMPORTED GLOBAL)
set_target_properties(LightGBM::lightgbm PROPERTIES
  IMPORTED_LOCATION "${LIGHTGBM_LIBRARY}"
  IMPORTED_NO_SONAME FALSE
  INTERFACE_INCLUDE_DIRECTORIES "${LIGHTGBM_ROOT}/include")

# The wheel's library needs the compiler's OpenMP runtime; it is bundled beside it so that
# machines without one (slim Spark images) can still load treescore.
set(TREESCORE_RUNTIME_LIBRARIES "${LIGHTGBM_LIBRARY}")
if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
  execute_process(
    COMMAND "${CMAKE_CXX_COMPILER}" -print-file-name=libgomp.so.1
    OUTPUT_VARIABLE LIBGOMP_PATH OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT IS_ABSOLUTE "${LIBGOMP_PATH}" OR NOT EXISTS "${LIBGOMP_PATH}")
    message(FATAL_ERROR "LightGBM's library needs libgomp.so.1, which ${CMAKE_CXX_COMPILER} cannot locate")
  endif()
  get_filename_component(LIBGOMP_PATH "${LIBGOMP_PATH}" REALPATH)
  set(TREESCORE_OPENMP_RUNTIME "${LIBGOMP_PATH}")
endif()
