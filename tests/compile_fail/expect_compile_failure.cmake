# Compiles one source file that must NOT compile and checks the compiler's diagnostics.
# Run as a ctest test:
#   cmake -DCOMPILER=<c++> -DFLAGS_FILE=<file, one flag per line> -DSOURCE=<file.cpp> -P expect_compile_failure.cmake
# Lines of SOURCE that say what the output must look like:
#   // expect: <regex>             the compiler output matches the CMake regular expression, anywhere;
#   // expect-first-line: <regex>  the first line that contains `error:` matches it (that is the line a
#                                  user reads first: it must name the op, the dtypes and the shapes);
#   // expect-max-lines: <n>       the output has at most n lines in all;
#   // expect-max-errors: <n>      at most n lines contain `error:`.
# The test passes only if compilation fails AND every expectation holds. A `;` in a regex is literal.
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

# Read line by line without CMake's list splitting at `;` (messages say "differ; convert ...").
string(ASCII 31 unit_separator)
file(READ "${SOURCE}" source_text)
string(REPLACE ";" "${unit_separator}" source_text "${source_text}")
string(REGEX MATCHALL "// expect(-first-line|-max-lines|-max-errors)?: [^\n]*" expect_lines "${source_text}")
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

string(REGEX MATCH "[^\n]*error:[^\n]*" first_error_line "${output}")
string(REGEX MATCHALL "\n" newlines "${output}")
list(LENGTH newlines line_count)
string(REGEX MATCHALL "error:" error_lines "${output}")
list(LENGTH error_lines error_count)

set(missing)
foreach(line IN LISTS expect_lines)
  string(REPLACE "${unit_separator}" ";" line "${line}")
  if(line MATCHES "^// expect-first-line: (.*)$")
    set(regex "${CMAKE_MATCH_1}")
    if(NOT first_error_line MATCHES "${regex}")
      string(APPEND missing "\n  first error line: ${regex}\n    (it is: ${first_error_line})")
    endif()
  elseif(line MATCHES "^// expect-max-errors: ([0-9]+)")
    set(limit "${CMAKE_MATCH_1}")
    if(error_count GREATER limit)
      string(APPEND missing "\n  at most ${limit} errors (there are ${error_count})")
    endif()
  elseif(line MATCHES "^// expect-max-lines: ([0-9]+)")
    set(limit "${CMAKE_MATCH_1}")
    if(line_count GREATER limit)
      string(APPEND missing "\n  at most ${limit} lines of output (there are ${line_count})")
    endif()
  else()
    string(REGEX REPLACE "^// expect: " "" regex "${line}")
    if(NOT output MATCHES "${regex}")
      string(APPEND missing "\n  ${regex}")
    endif()
  endif()
endforeach()
if(missing)
  message(FATAL_ERROR "${SOURCE} failed to compile (as it should), but the diagnostics lack:${missing}\n"
                      "Compiler output:\n${output}")
endif()
list(LENGTH expect_lines count)
message(STATUS "${SOURCE}: rejected with the expected diagnostics (${count} expectations met, "
               "${line_count} lines)\nfirst error line: ${first_error_line}")
