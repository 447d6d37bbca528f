# Generates wire_codes.h from wire/codes.txt, the one definition of the codes the JVM, the
# native library and Python pass one another: per group an enum class and its last code.
set(wire_codes_source "${CMAKE_CURRENT_SOURCE_DIR}/../wire/codes.txt")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${wire_codes_source}")
file(STRINGS "${wire_codes_source}" wire_lines REGEX "^[A-Z]")
set(wire_body "")
foreach(line IN LISTS wire_lines)
  string(REGEX MATCH "^[A-Za-z0-9]+" group "${line}")
  string(REGEX MATCHALL "[A-Za-z0-9]+=[0-9]+" members "${line}")
  set(enumerators "")
  set(last -1)
  foreach(member IN LISTS members)
    string(REPLACE "=" ";" parts "${member}")
    list(GET parts 0 name)
    list(GET parts 1 code)
    math(EXPR expected "${last} + 1")
    if(NOT code EQUAL expected)
      message(FATAL_ERROR "${wire_codes_source}: ${group}'s ${name} has code ${code}; codes count from 0 without gaps")
    endif()
    string(APPEND enumerators "  k${name} = ${code},\n")
    set(last ${code})
  endforeach()
  string(APPEND wire_body "enum class ${group} : int {\n${enumerators}};\nconstexpr int k${group}Last = ${last};\n\n")
endforeach()
set(wire_codes_header "${CMAKE_BINARY_DIR}/generated/wire_codes.h")
file(CONFIGURE OUTPUT "${wire_codes_header}" CONTENT "// Generated from wire/codes.txt by native/cmake/WireCodes.cmake: edit that file, not this one.
#pragma once

namespace treescore {
namespace wire {

${wire_body}}  // namespace wire
}  // namespace treescore
" @ONLY)
# And wire_limits.h from wire/limits.txt: one constexpr per limit.
set(wire_limits_source "${CMAKE_CURRENT_SOURCE_DIR}/../wire/limits.txt")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${wire_limits_source}")
file(STRINGS "${wire_limits_source}" limit_lines REGEX "^[A-Z]")
set(limits_body "")
foreach(line IN LISTS limit_lines)
  if(NOT line MATCHES "^([A-Za-z0-9]+)=([0-9]+)$")
    message(FATAL_ERROR "${wire_limits_source}: '${line}' is not Name=value")
  endif()
  string(APPEND limits_body "constexpr long long k${CMAKE_MATCH_1} = ${CMAKE_MATCH_2};\n")
endforeach()
file(CONFIGURE OUTPUT "${CMAKE_BINARY_DIR}/generated/wire_limits.h" CONTENT "// Generated from wire/limits.txt by native/cmake/WireCodes.cmake: edit that file, not this one.
#pragma once

namespace treescore {
namespace wire {

${limits_body}
}  // namespace wire
}  // namespace treescore
" @ONLY)
add_library(treescore_wire_codes INTERFACE)
target_include_directories(treescore_wire_codes INTERFACE "${CMAKE_BINARY_DIR}/generated")
