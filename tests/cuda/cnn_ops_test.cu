// The CNN ops through cuda::eval against the CPU backend (cnn_cases.hpp): conv2d and its adjoints,
// dropout, softmax cross-entropy and pooling, all on the device (cuda/conv_ops.hpp, kernel_ops.hpp,
// loss_ops.hpp, pool_ops.hpp). A tiny CNN's training step: cnn_step_test.cu. Every test skips
// without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "cnn_cases.hpp"
#include "gpu_harness.cuh"

namespace symflow_cuda_test {
namespace {
using namespace symflow;

#define SYMFLOW_CUDA_CNN_TEST(name) \
  TEST_F(Gpu, Cnn_##name) { check_case<cnn_cases::name>(__LINE__ * 7919u + 31u); }
SYMFLOW_CUDA_CNN_CASES(SYMFLOW_CUDA_CNN_TEST)

// Padding labels (negative) and a label of K or more, which the random cases never draw: the device
// gives the CPU's zero rows for padding, and the CPU's value_error, naming the example, for a bad one.
TEST_F(Gpu, CrossEntropyPaddingAndBadLabelsAsOnTheCpu) {
  namespace cuda = symflow::cuda;
  auto logits = placeholder<"logits", float, shape<dyn, 3>>();
  auto y = placeholder<"y", std::int32_t, shape<dyn>>();
  tensor<float, shape<dyn, 3>> l{{1, 2, 3}, {0, 0, 0}, {-1, 5, 2}, {4, 4, 4}};
  tensor<std::int32_t, shape<dyn>> padded{2, -1, 1, -7}, bad{2, 0, 3, 1};
  const auto dl = cuda::to_device(l);
  const auto dpadded = cuda::to_device(padded), dbad = cuda::to_device(bad);
  auto loss = softmax_cross_entropy(logits, y);
  auto dlogits = grad(sum(softmax_cross_entropy(logits, y) * 2.0f), logits);
  const auto gpu_loss = cuda::eval(loss, cuda::feed(logits, dl), cuda::feed(y, dpadded)).to_host();
  const auto gpu_grad = cuda::eval(dlogits, cuda::feed(logits, dl), cuda::feed(y, dpadded)).to_host();
  // float64 by hand: loss = logsumexp(row) - row[label]; d/dlogits of 2 * loss = 2 (softmax - one_hot).
  for (std::size_t i = 0; i < 4; ++i) {
    double m = l(i, 0), s = 0;
    for (std::size_t j = 1; j < 3; ++j) m = std::max(m, double(l(i, j)));
    for (std::size_t j = 0; j < 3; ++j) s += std::exp(double(l(i, j)) - m);
    const int label = padded(i);
    EXPECT_NEAR(gpu_loss(i), label < 0 ? 0.0 : m + std::log(s) - double(l(i, std::size_t(label))), 1e-6) << i;
    for (std::size_t j = 0; j < 3; ++j) {
      const double p = std::exp(double(l(i, j)) - m) / s, expect = label < 0 ? 0.0 : 2 * (p - (int(j) == label));
      EXPECT_NEAR(gpu_grad(i, j), expect, 1e-6) << i << "," << j;
    }
  }
  EXPECT_EQ(gpu_loss(1), 0.0f);
  EXPECT_EQ(gpu_grad(3, 0), 0.0f);
  try {
    (void)cuda::eval(loss, cuda::feed(logits, dl), cuda::feed(y, dbad)).to_host();
    ADD_FAILURE() << "no value_error on the device";
  } catch (const value_error& e) {  // the CPU's words (ops/softmax_cross_entropy.hpp, check_labels)
    EXPECT_EQ(std::string(e.what()), "softmax_cross_entropy: label 3 of example 2 is not a class index in [0, 3) "
                                     "(a negative label marks a padding example)");
  }
  EXPECT_THROW((void)cuda::eval(dlogits, cuda::feed(logits, dl), cuda::feed(y, dbad)).to_host(), value_error);
}
}  // namespace
}  // namespace symflow_cuda_test
