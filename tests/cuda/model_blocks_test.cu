// Model-block ops (activations, normalisation, attention) and their gradients on the GPU against
// the CPU backend.
#include "gpu_harness.cuh"
#include "model_blocks_cases.hpp"

namespace symflow_cuda_test {
SYMFLOW_CUDA_MODEL_BLOCK_CASES(SYMFLOW_CUDA_CASE_TEST)
}  // namespace symflow_cuda_test
