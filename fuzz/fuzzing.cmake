# Included by the top-level CMakeLists.txt when SYMFLOW_FUZZ is on. Builds fuzz/ as an external
# project with a clang++ that has libFuzzer (the rest of the build may use another compiler), and
# registers one short ctest run per fuzzer over its seed corpus (tests/data/fuzz/<format>): graph
# JSON, graph binary, .npy, safetensors checkpoints, IDX (plain and gzip) and the CLI's --feed.

# The seed corpus generator builds expression types and gradients, which clang 14 cannot compile:
# it is built with the project's own compiler, on request only (ninja fuzz_seed_corpus).
find_package(nlohmann_json 3 QUIET)
if(nlohmann_json_FOUND)
  add_executable(fuzz_seed_corpus EXCLUDE_FROM_ALL "${PROJECT_SOURCE_DIR}/fuzz/make_seed_corpus.cpp")
  target_link_libraries(fuzz_seed_corpus PRIVATE symflow::symflow symflow_project_flags nlohmann_json::nlohmann_json)
endif()

find_program(SYMFLOW_FUZZ_CXX NAMES clang++ clang++-18 clang++-17 clang++-16 clang++-15 clang++-14
             DOC "clang++ with libFuzzer, for the fuzz targets")
# clang++ alone is not enough: Debian ships libFuzzer's runtime separately (libclang-rt-14-dev).
if(SYMFLOW_FUZZ_CXX AND NOT SYMFLOW_FUZZ_PROBED_WITH STREQUAL SYMFLOW_FUZZ_CXX)
  set(symflow_fuzz_probe_dir "${PROJECT_BINARY_DIR}/fuzz-probe")
  file(WRITE "${symflow_fuzz_probe_dir}/probe.cpp"
    "#include <cstddef>\n#include <cstdint>\n"
    "extern \"C\" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }\n")
  execute_process(
    COMMAND "${SYMFLOW_FUZZ_CXX}" -fsanitize=fuzzer,address,undefined probe.cpp -o probe
    WORKING_DIRECTORY "${symflow_fuzz_probe_dir}" RESULT_VARIABLE symflow_fuzz_probe_result OUTPUT_QUIET ERROR_QUIET)
  if(symflow_fuzz_probe_result EQUAL 0)
    set(SYMFLOW_FUZZ_WORKS ON CACHE INTERNAL "SYMFLOW_FUZZ_CXX links libFuzzer with ASan and UBSan")
  else()
    set(SYMFLOW_FUZZ_WORKS OFF CACHE INTERNAL "SYMFLOW_FUZZ_CXX links libFuzzer with ASan and UBSan")
  endif()
  set(SYMFLOW_FUZZ_PROBED_WITH "${SYMFLOW_FUZZ_CXX}" CACHE INTERNAL "the compiler SYMFLOW_FUZZ_WORKS is about")
endif()

if(NOT SYMFLOW_FUZZ_CXX OR NOT SYMFLOW_FUZZ_WORKS)
  message(STATUS "symflow: no clang++ with libFuzzer found (Debian: clang-14 libclang-rt-14-dev); the fuzz targets are skipped")
  return()
endif()
if(NOT nlohmann_json_FOUND)
  message(STATUS "symflow: nlohmann-json not found; the fuzz targets are skipped")
  return()
endif()
message(STATUS "symflow: fuzz targets enabled (${SYMFLOW_FUZZ_CXX})")

include(ExternalProject)
set(SYMFLOW_FUZZ_JOBS 2 CACHE STRING "Parallel jobs of the fuzz targets' build")
ExternalProject_Add(symflow_fuzz_build
  SOURCE_DIR "${PROJECT_SOURCE_DIR}/fuzz"
  BINARY_DIR "${PROJECT_BINARY_DIR}/fuzz"
  CMAKE_ARGS
    -DCMAKE_CXX_COMPILER=${SYMFLOW_FUZZ_CXX}
    -DEigen3_DIR=${Eigen3_DIR}
    -Dnlohmann_json_DIR=${nlohmann_json_DIR}
  BUILD_COMMAND "${CMAKE_COMMAND}" --build <BINARY_DIR> -j ${SYMFLOW_FUZZ_JOBS}
  BUILD_ALWAYS ON
  INSTALL_COMMAND "")

if(SYMFLOW_BUILD_TESTS)
  # A regression check, not a search: a fixed seed and a fixed number of inputs beyond the seed corpus
  # (whose bad-* and regression-* files replay every refusal and every fixed crash). The long runs are
  # scripts/fuzz.sh's job.
  set(SYMFLOW_FUZZ_CI_RUNS 20000 CACHE STRING "Inputs each fuzzer's ctest entry runs")
  find_program(SYMFLOW_BASH bash)
  set(symflow_fuzz_formats json binary npy safetensors idx cli_feed)
  find_package(Protobuf QUIET)
  if(Protobuf_FOUND)
    find_package(ONNX QUIET)
  endif()
  if(ONNX_FOUND)
    list(APPEND symflow_fuzz_formats onnx)  # fuzz/CMakeLists.txt builds fuzz_onnx_import then
  endif()
  foreach(format ${symflow_fuzz_formats})
    add_test(NAME fuzz_${format}
      COMMAND "${SYMFLOW_BASH}" "${PROJECT_SOURCE_DIR}/scripts/fuzz.sh" --build-dir "${PROJECT_BINARY_DIR}"
              --runs ${SYMFLOW_FUZZ_CI_RUNS} --max-time 60 --seed 1 --fresh ${format})
    set_tests_properties(fuzz_${format} PROPERTIES LABELS fuzz TIMEOUT 180)
  endforeach()
endif()
