# Configures, builds and runs the consumer project in tests/consumer as a separate project:
#   MODE=install       installs symflow from SYMFLOW_BINARY_DIR into WORK_DIR/prefix and uses it
#                      through find_package(symflow CONFIG REQUIRED)
#   MODE=subdirectory  uses SYMFLOW_SOURCE_DIR through add_subdirectory with symflow's defaults for
#                      a subproject, GoogleTest, Google Benchmark and CUDA hidden from find_package,
#                      the consumer compiled with -Wall -Wextra -Wpedantic -Werror
# Other inputs: CONSUMER_SOURCE_DIR, WORK_DIR (wiped first), GENERATOR, MAKE_PROGRAM, CXX_COMPILER,
# BUILD_TYPE, EIGEN3_DIR (optional).
cmake_minimum_required(VERSION 3.22)

foreach(var MODE CONSUMER_SOURCE_DIR WORK_DIR GENERATOR CXX_COMPILER BUILD_TYPE)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "run_consumer: ${var} is not set")
  endif()
endforeach()

function(run step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT result EQUAL 0)
    string(REPLACE ";" " " command "${ARGN}")
    message(FATAL_ERROR "consumer (${MODE}): ${step} failed (${result})\n${command}\n${out}")
  endif()
  message(STATUS "consumer (${MODE}): ${step}: ok")
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(build "${WORK_DIR}/build")

set(configure_args -S "${CONSUMER_SOURCE_DIR}" -B "${build}" -G "${GENERATOR}"
  "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}" "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}"
  -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON)
if(MAKE_PROGRAM)
  list(APPEND configure_args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
if(EIGEN3_DIR)
  list(APPEND configure_args "-DEigen3_DIR=${EIGEN3_DIR}")
endif()

if(MODE STREQUAL "install")
  if(NOT DEFINED SYMFLOW_BINARY_DIR)
    message(FATAL_ERROR "run_consumer: SYMFLOW_BINARY_DIR is not set")
  endif()
  set(prefix "${WORK_DIR}/prefix")
  run("install symflow" "${CMAKE_COMMAND}" --install "${SYMFLOW_BINARY_DIR}" --prefix "${prefix}" --config "${BUILD_TYPE}")
  foreach(installed include/symflow/symflow.hpp)
    if(NOT EXISTS "${prefix}/${installed}")
      message(FATAL_ERROR "consumer (install): ${prefix}/${installed} was not installed")
    endif()
  endforeach()
  run("configure" "${CMAKE_COMMAND}" ${configure_args} "-DCMAKE_PREFIX_PATH=${prefix}")
  # The package found must be the one just installed.
  file(STRINGS "${build}/CMakeCache.txt" found REGEX "^symflow_DIR:")
  string(FIND "${found}" "${prefix}/" at)
  if(NOT at GREATER -1)
    message(FATAL_ERROR "consumer (install): found symflow elsewhere: ${found} (expected under ${prefix})")
  endif()
elseif(MODE STREQUAL "subdirectory")
  if(NOT DEFINED SYMFLOW_SOURCE_DIR)
    message(FATAL_ERROR "run_consumer: SYMFLOW_SOURCE_DIR is not set")
  endif()
  # symflow's defaults as a subproject, on a machine without GoogleTest, Google Benchmark or a
  # CUDA toolkit as far as CMake can tell: it must configure without them and build nothing but
  # the consumer.
  run("configure" "${CMAKE_COMMAND}" ${configure_args} "-DSYMFLOW_SOURCE_DIR=${SYMFLOW_SOURCE_DIR}"
      -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON
      -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON -DCONSUMER_WERROR=ON --no-warn-unused-cli)
  foreach(unwanted "CUDA" "GTest" "GoogleTest" "benchmark" "fuzz" "-- symflow:")
    string(FIND "${last_output}" "${unwanted}" at)
    if(at GREATER -1)
      message(FATAL_ERROR "consumer (subdirectory): configuring mentions '${unwanted}':\n${last_output}")
    endif()
  endforeach()
else()
  message(FATAL_ERROR "run_consumer: MODE must be install or subdirectory, not '${MODE}'")
endif()

run("build" "${CMAKE_COMMAND}" --build "${build}" --config "${BUILD_TYPE}")
if(MODE STREQUAL "subdirectory")
  string(REGEX MATCHALL "Linking [A-Z]+ [a-z ]+ [^\n]*" linked "${last_output}")
  list(LENGTH linked linked_count)
  if(NOT linked_count EQUAL 1)
    message(FATAL_ERROR "consumer (subdirectory): built more than the consumer:\n${last_output}")
  endif()
endif()

# Single-config generators put the program in the build directory, multi-config ones under the config.
set(program "${build}/consumer")
if(NOT EXISTS "${program}" AND EXISTS "${build}/${BUILD_TYPE}/consumer")
  set(program "${build}/${BUILD_TYPE}/consumer")
endif()
run("run" "${program}")
if(NOT last_output MATCHES "consumer: ok")
  message(FATAL_ERROR "consumer (${MODE}): unexpected output:\n${last_output}")
endif()
message(STATUS "${last_output}")
