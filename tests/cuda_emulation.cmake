# The CUDA backend's GPU suites (tests/cuda/) run on every machine: their .cu files compiled by the
# host compiler against the emulator of CUDA's execution model, runtime and cuBLAS
# (cuda/include/symflow/cuda/emulation/, SYMFLOW_CUDA_HOST_EMULATION; docs/cuda.md, "Host emulation
# of the execution model"), the CPU references as they are. The same sources are built by nvcc in
# the CUDA sub-build, where they run on a real GPU when one is present. ctest label `cuda_emulation`.
option(SYMFLOW_CUDA_EMULATION_TESTS "Build and run the GPU suites under host emulation" ON)
if(NOT SYMFLOW_CUDA_EMULATION_TESTS)
  return()
endif()

# Every suite of the GPU test program but NVRTC's (its kernels are compiled by NVRTC at run time:
# scripts/nvrtc_emulation.sh runs those on the host).
set(symflow_emulated_suites
  expressions_elementwise_test expressions_structure_test expressions_gradient_test api_test training_test
  mlp_step_test cnn_ops_test cnn_step_test model_blocks_test model_blocks_grad_test numerics_test
  placement_log_test epilogue_test
  # Emulation only: W4's kernels, GEMMs and copies per step, from the emulator's counters.
  emulated_w4_counts_test)
set(symflow_emulated_references
  cpu_reference training_reference cnn_reference model_blocks_reference numerics_reference epilogue_reference)

set(symflow_emulation_sources)
foreach(suite ${symflow_emulated_suites})
  # The host compiler takes a .cu file as C++ through a unit that includes it.
  set(unit ${CMAKE_CURRENT_BINARY_DIR}/cuda_emulation/${suite}.cpp)
  file(CONFIGURE OUTPUT ${unit} CONTENT "#include \"${CMAKE_CURRENT_SOURCE_DIR}/cuda/${suite}.cu\"\n")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/cuda/${suite}.cu)
  list(APPEND symflow_emulation_sources ${unit})
endforeach()
foreach(reference ${symflow_emulated_references})
  list(APPEND symflow_emulation_sources ${CMAKE_CURRENT_SOURCE_DIR}/cuda/${reference}.cpp)
endforeach()

add_executable(cuda_emulation_suite ${symflow_emulation_sources})
target_compile_definitions(cuda_emulation_suite PRIVATE SYMFLOW_CUDA_HOST_EMULATION)
# The emulation's <cuda_runtime.h>, <cublas_v2.h> and <cublasLt.h> before any other.
target_include_directories(cuda_emulation_suite BEFORE PRIVATE ${PROJECT_SOURCE_DIR}/cuda/emulation/include)
target_include_directories(cuda_emulation_suite PRIVATE ${PROJECT_SOURCE_DIR}/cuda/include ${CMAKE_CURRENT_SOURCE_DIR}/cuda)
target_link_libraries(cuda_emulation_suite PRIVATE symflow::symflow symflow_project_flags symflow_library
                      GTest::gtest GTest::gtest_main)
if(NOT SYMFLOW_SANITIZE)
  # As the other test programs (and as the CUDA sub-build compiles the suites' host code).
  target_compile_options(cuda_emulation_suite PRIVATE ${SYMFLOW_TEST_OPTIMIZATION} -Wno-uninitialized -Wno-maybe-uninitialized)
endif()
# nvcc's #pragma unroll is not GCC's (#pragma GCC unroll): the host compiler ignores it, and says so.
target_compile_options(cuda_emulation_suite PRIVATE -Wno-unknown-pragmas)
if(SYMFLOW_TEST_PCH)
  target_precompile_headers(cuda_emulation_suite REUSE_FROM symflow_test_pch)
endif()
gtest_discover_tests(cuda_emulation_suite DISCOVERY_TIMEOUT 60 TEST_PREFIX emulated. PROPERTIES LABELS cuda_emulation)
# The whole program again with the emulated threads resumed in other orders, so that a race between
# threads that forward order hides (a read of shared memory before another warp's write, say) fails.
add_test(NAME emulated_reverse_order COMMAND cuda_emulation_suite)
add_test(NAME emulated_random_order COMMAND cuda_emulation_suite)
set_tests_properties(emulated_reverse_order PROPERTIES LABELS cuda_emulation ENVIRONMENT "SYMFLOW_EMU_ORDER=reverse")
set_tests_properties(emulated_random_order PROPERTIES LABELS cuda_emulation ENVIRONMENT "SYMFLOW_EMU_ORDER=random:20261203")
