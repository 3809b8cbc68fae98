// Gradients of layer norm and attention on the GPU against the CPU backend; the other model-block
// cases: model_blocks_test.cu.
#include "gpu_harness.cuh"
#include "model_blocks_cases.hpp"

namespace symflow_cuda_test {
SYMFLOW_CUDA_MODEL_BLOCK_GRADIENT_CASES(SYMFLOW_CUDA_CASE_TEST)
}  // namespace symflow_cuda_test
