# The default toolchain of every native build: zig's clang for glibc 2.17 on TREESCORE_TARGET
# (x86_64 or aarch64; the build machine's own architecture unless set), from build/toolchain.py,
# which installs it from PyPI. Set CMAKE_TOOLCHAIN_FILE to build with another.

set(TREESCORE_TARGET "${CMAKE_HOST_SYSTEM_PROCESSOR}" CACHE STRING "The target architecture: x86_64 or aarch64")
# The Python that runs the build scripts, which need pip: the one given to CMake, else the
# build's (sbt passes TREESCORE_PYTHON), else python3 on PATH.
if(NOT TREESCORE_SCRIPT_PYTHON)
  if(Python3_EXECUTABLE)
    set(TREESCORE_SCRIPT_PYTHON "${Python3_EXECUTABLE}")
  elseif(DEFINED ENV{TREESCORE_PYTHON})
    set(TREESCORE_SCRIPT_PYTHON "$ENV{TREESCORE_PYTHON}")
  else()
    find_program(TREESCORE_SCRIPT_PYTHON NAMES python3 REQUIRED)
  endif()
endif()
# try_compile projects read this file again; they get the values, not a second install.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES TREESCORE_TARGET TREESCORE_SCRIPT_PYTHON)

execute_process(
  COMMAND "${TREESCORE_SCRIPT_PYTHON}" "${CMAKE_CURRENT_LIST_DIR}/../../build/toolchain.py" "${TREESCORE_TARGET}"
  OUTPUT_VARIABLE TREESCORE_TOOLS OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE toolchain_result)
if(NOT toolchain_result EQUAL 0)
  message(FATAL_ERROR "Could not install the zig toolchain for ${TREESCORE_TARGET} (build/toolchain.py)")
endif()

if(NOT TREESCORE_TARGET STREQUAL CMAKE_HOST_SYSTEM_PROCESSOR)
  set(CMAKE_SYSTEM_NAME Linux)
  set(CMAKE_SYSTEM_PROCESSOR "${TREESCORE_TARGET}")
endif()
set(CMAKE_C_COMPILER "${TREESCORE_TOOLS}/cc")
set(CMAKE_CXX_COMPILER "${TREESCORE_TOOLS}/c++")
# IEEE arithmetic as written in every file, tests' references included: clang fuses a * b + c
# into one rounding by default wherever the target has FMA (every aarch64), which changes bits.
set(CMAKE_C_FLAGS_INIT "-ffp-contract=off -fno-fast-math")
set(CMAKE_CXX_FLAGS_INIT "-ffp-contract=off -fno-fast-math")
