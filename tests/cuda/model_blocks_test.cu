// Model-block ops (activations and their gradients, normalisation, attention) on the GPU against the
// CPU backend; the gradients of layer norm and attention: model_blocks_grad_test.cu.
#include "gpu_harness.cuh"
#include "model_blocks_cases.hpp"

namespace symflow_cuda_test {
SYMFLOW_CUDA_MODEL_BLOCK_OP_CASES(SYMFLOW_CUDA_CASE_TEST)
}  // namespace symflow_cuda_test
