// One training step of a tiny examples/cnn.cpp through cuda::eval against the CPU backend
// (cnn_cases.hpp): loss and gradients of conv2d, pooling, dense layers and softmax cross-entropy.
// A translation unit of its own: with the op cases (cnn_ops_test.cu) nvcc needed 2.8 GB and 80 s.
// Skips without a device.
#include <gtest/gtest.h>

#include "cnn_cases.hpp"
#include "gpu_harness.cuh"

namespace symflow_cuda_test {
namespace {
using namespace symflow;

// Loss and the eight gradients as nine outputs of one evaluation. The backends differ by rounding
// only (cuBLAS against Eigen GEMMs, summation orders); pooling's argmax could differ only at a tie
// within that rounding, which random inputs make unlikely.
TEST_F(Gpu, TinyCnnTrainingStep) {
  const cnn_cases::tiny_cnn m;
  const cnn_cases::tiny_cnn_inputs in = cnn_cases::random_tiny_cnn_inputs(8, 5u);
  const std::vector<host_array> expected = cnn_cases::tiny_cnn_step_on_cpu(in);
  const auto outputs =
      std::apply([&](const auto&... e) { return cuda::eval(e..., m.x = in.x, m.y = in.y, in.store); }, m.step());
  SYMFLOW_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<host_array> got = std::apply([](const auto&... d) { return std::vector<host_array>{download(d)...}; }, outputs);
  ASSERT_EQ(got.size(), expected.size());
  const char* names[] = {"loss", "conv1/W", "conv1/b", "conv2/W", "conv2/b", "dense/W", "dense/b", "logits/W", "logits/b"};
  for (std::size_t k = 0; k < got.size(); ++k) {
    const comparison c = compare(got[k], expected[k], k == 0 ? 1e-5 : 1e-4);
    EXPECT_TRUE(c.ok) << names[k] << ": " << c.message;
  }
}

}  // namespace
}  // namespace symflow_cuda_test
