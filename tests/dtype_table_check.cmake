# Fails when a header in include/ or cuda/ switches on a dtype (`case dtype::` or
# `case symflow::dtype::`) outside the dtype table, include/symflow/core/dtype.hpp: every other file
# asks the table (dtype_info_of, find_dtype, visit_dtype, ...), so that a new dtype is one new row.
#
#   cmake -DSYMFLOW_SOURCE_DIR=<repository root> -P tests/dtype_table_check.cmake
#
# It cannot pass by finding nothing to look at: it fails unless the table header holds the table,
# unless it read at least 100 headers, and unless its pattern matches a line known to switch on a dtype.
if(NOT SYMFLOW_SOURCE_DIR)
  message(FATAL_ERROR "dtype table check: set -DSYMFLOW_SOURCE_DIR=<repository root>")
endif()
set(table "${SYMFLOW_SOURCE_DIR}/include/symflow/core/dtype.hpp")
set(pattern "case[ \t]+(symflow::)?dtype::")

# The pattern itself: it must see both spellings, and not an unrelated case label.
foreach(line "    case dtype::f32: return 4;" "  case symflow::dtype::boolean:")
  if(NOT line MATCHES "${pattern}")
    message(FATAL_ERROR "dtype table check: the pattern misses '${line}'")
  endif()
endforeach()
if("    case idx_type::f32: return 4;" MATCHES "${pattern}")
  message(FATAL_ERROR "dtype table check: the pattern matches a case label that is no dtype")
endif()

if(NOT EXISTS "${table}")
  message(FATAL_ERROR "dtype table check: ${table} does not exist")
endif()
file(READ "${table}" table_text)
if(NOT table_text MATCHES "inline constexpr std::tuple dtype_table" OR NOT table_text MATCHES "dtype_row<float>")
  message(FATAL_ERROR "dtype table check: ${table} holds no dtype table (dtype_table of dtype_row<...> rows)")
endif()

file(GLOB_RECURSE headers LIST_DIRECTORIES false
     "${SYMFLOW_SOURCE_DIR}/include/*.hpp" "${SYMFLOW_SOURCE_DIR}/include/*.h"
     "${SYMFLOW_SOURCE_DIR}/cuda/*.hpp" "${SYMFLOW_SOURCE_DIR}/cuda/*.h" "${SYMFLOW_SOURCE_DIR}/cuda/*.cuh"
     "${SYMFLOW_SOURCE_DIR}/cuda/*.cu" "${SYMFLOW_SOURCE_DIR}/cuda/*.cpp")
list(LENGTH headers count)
if(count LESS 100)
  message(FATAL_ERROR "dtype table check: only ${count} files under include/ and cuda/ (at least 100 expected); "
                      "is SYMFLOW_SOURCE_DIR the repository root?")
endif()

set(found "")
foreach(file ${headers})
  if(file STREQUAL table)
    continue()
  endif()
  file(READ "${file}" text)
  if(NOT text MATCHES "${pattern}")
    continue()
  endif()
  # Only files that switch on a dtype are read line by line, for the line numbers.
  file(STRINGS "${file}" lines)
  file(RELATIVE_PATH name "${SYMFLOW_SOURCE_DIR}" "${file}")
  set(number 0)
  foreach(line IN LISTS lines)
    math(EXPR number "${number} + 1")
    if(line MATCHES "${pattern}")
      string(STRIP "${line}" line)
      string(APPEND found "  ${name}:${number}: ${line}\n")
    endif()
  endforeach()
endforeach()

if(found)
  message(FATAL_ERROR "dtype table check: these lines switch on a dtype outside the dtype table "
                      "(include/symflow/core/dtype.hpp); ask the table instead (dtype_info_of, find_dtype, "
                      "visit_dtype):\n${found}")
endif()
message(STATUS "dtype table check: ${count} files under include/ and cuda/, no switch on a dtype outside the table")
