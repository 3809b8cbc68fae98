# Compiles one source file that must NOT compile and checks the compiler's diagnostics.
# Run as a ctest test:
#   cmake -DCOMPILER=<c++> -DFLAGS_FILE=<file, one flag per line> -DSOURCE=<file.cpp> -P expect_compile_failure.cmake
# Every line of SOURCE of the form `// expect: <regex>` is a CMake regular expression that the
# compiler output must match. The test passes only if compilation fails AND every regex matches.
cmake_minimum_required(VERSION 3.22)

foreach(var COMPILER FLAGS_FILE SOURCE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "expect_compile_failure: ${var} is not set")
  endif()
endforeach()

file(STRINGS "${FLAGS_FILE}" flag_lines)
set(flags)
foreach(flag IN LISTS flag_lines)
  # Empty entries (an $<INSTALL_INTERFACE:...> include, say) leave bare option names behind.
  if(flag STREQUAL "" OR flag STREQUAL "-I" OR flag STREQUAL "-isystem" OR flag STREQUAL "-D")
    continue()
  endif()
  list(APPEND flags "${flag}")
endforeach()

file(STRINGS "${SOURCE}" expect_lines REGEX "^// expect: ")
if(NOT expect_lines)
  message(FATAL_ERROR "${SOURCE}: no `// expect: <regex>` lines: nothing to check the diagnostics against")
endif()

execute_process(
  COMMAND "${COMPILER}" ${flags} -fsyntax-only "${SOURCE}"
  RESULT_VARIABLE result
  OUTPUT_VARIABLE output
  ERROR_VARIABLE output)

if(result EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but it must be rejected at compile time.\nCommand: ${COMPILER} ${flags} -fsyntax-only ${SOURCE}")
endif()

set(missing)
foreach(line IN LISTS expect_lines)
  string(REGEX REPLACE "^// expect: " "" regex "${line}")
  if(NOT output MATCHES "${regex}")
    string(APPEND missing "\n  ${regex}")
  endif()
endforeach()
if(missing)
  message(FATAL_ERROR "${SOURCE} failed to compile (as it should), but the diagnostics lack:${missing}\n"
                      "Compiler output:\n${output}")
endif()
list(LENGTH expect_lines count)
message(STATUS "${SOURCE}: rejected with the expected diagnostics (${count} patterns matched)")
