// Elementwise ops, dtypes and broadcasting on the GPU against the CPU backend.
#include "cases.hpp"
#include "gpu_harness.cuh"

namespace symflow_cuda_test {
SYMFLOW_CUDA_ELEMENTWISE_CASES(SYMFLOW_CUDA_CASE_TEST)
}  // namespace symflow_cuda_test
