// Gradients (symbolic grad) evaluated on the GPU against the CPU backend.
#include "cases.hpp"
#include "gpu_harness.cuh"

namespace symflow_cuda_test {
SYMFLOW_CUDA_GRADIENT_CASES(SYMFLOW_CUDA_CASE_TEST)
}  // namespace symflow_cuda_test
