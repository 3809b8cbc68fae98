// The CNN ops through cuda::eval against the CPU backend (cnn_cases.hpp): conv2d and its adjoints
// and dropout on the device (cuda/conv_ops.hpp, kernel_ops.hpp), pooling and softmax cross-entropy
// through their host fallback. A tiny CNN's training step: cnn_step_test.cu. Every test skips without a device.
#include <gtest/gtest.h>

#include "cnn_cases.hpp"
#include "gpu_harness.cuh"

namespace symflow_cuda_test {
namespace {
using namespace symflow;

#define SYMFLOW_CUDA_CNN_TEST(name) \
  TEST_F(Gpu, Cnn_##name) { check_case<cnn_cases::name>(__LINE__ * 7919u + 31u); }
SYMFLOW_CUDA_CNN_CASES(SYMFLOW_CUDA_CNN_TEST)
}  // namespace
}  // namespace symflow_cuda_test
