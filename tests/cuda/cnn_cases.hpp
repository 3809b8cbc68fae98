#pragma once
// The CNN ops on the GPU (conv2d and its two adjoints, max/avg pooling and their backward ops,
// dropout, softmax cross-entropy): all run on the device (cuda/conv_ops.hpp, kernel_ops.hpp,
// loss_ops.hpp, pool_ops.hpp; an op without one runs its run_cpu on host copies, docs/cuda.md).
// Each case runs through cuda::eval,
// fused with the elementwise work around it, against the CPU backend on random inputs; one training
// step of a tiny version of examples/cnn.cpp checks them together.
#include <cstdint>
#include <tuple>
#include <vector>

#include <symflow/core/params.hpp>

#include "cases.hpp"
#include "harness.hpp"

namespace symflow_cuda_test::cnn_cases {
using namespace symflow;
using cases::ext;
using cases::range_t;

struct conv_valid {
  static auto leaves() {
    return std::tuple{placeholder<"x", float, shape<dyn, dyn, dyn, 3>>(), variable<"w", float, shape<3, 3, 3, 5>>()};
  }
  static auto build(const auto& x, const auto& w) { return conv2d(x, w); }
  static ext extents() { return {{2, 9, 11, 3}, {3, 3, 3, 5}}; }
};
struct conv_same_stride2 {
  static auto leaves() { return conv_valid::leaves(); }
  static auto build(const auto& x, const auto& w) { return conv2d<2, padding::same>(x, w); }
  static ext extents() { return conv_valid::extents(); }
};
struct conv_bias_relu {  // the conv's product read by a fused map, as in a CNN layer
  static auto leaves() {
    return std::tuple{placeholder<"x", float, shape<dyn, dyn, dyn, 3>>(), variable<"w", float, shape<3, 3, 3, 5>>(),
                      variable<"b", float, shape<5>>()};
  }
  static auto build(const auto& x, const auto& w, const auto& b) { return relu(conv2d<1, padding::same>(x, w) + b); }
  static ext extents() { return {{2, 9, 11, 3}, {3, 3, 3, 5}, {5}}; }
};
struct conv_grad_input {  // conv2d_backprop_input
  static auto leaves() { return conv_valid::leaves(); }
  static auto build(const auto& x, const auto& w) { return grad(sum(square(conv2d<2, padding::same>(x, w))), x); }
  static ext extents() { return conv_valid::extents(); }
};
struct conv_grad_filter {  // conv2d_backprop_filter
  static auto leaves() { return conv_valid::leaves(); }
  static auto build(const auto& x, const auto& w) { return grad(sum(square(conv2d<2, padding::same>(x, w))), w); }
  static ext extents() { return conv_valid::extents(); }
};
struct conv_grad_filter_valid {
  static auto leaves() { return conv_valid::leaves(); }
  static auto build(const auto& x, const auto& w) { return grad(sum(square(conv2d(x, w))), w); }
  static ext extents() { return conv_valid::extents(); }
};
// Dilation and groups (im2col per group with dilated taps, GEMMs on column blocks, the gather by
// group): 6 channels in 3 groups, dilation 2, and a depthwise filter (groups = channels).
struct conv_dilated_grouped {
  static auto leaves() {
    return std::tuple{placeholder<"x", float, shape<dyn, dyn, dyn, 6>>(), variable<"w", float, shape<3, 2, 2, 9>>()};
  }
  static auto build(const auto& x, const auto& w) { return conv2d<2, padding::same, 2, 3>(x, w); }
  static ext extents() { return {{2, 9, 11, 6}, {3, 2, 2, 9}}; }
};
struct conv_dilated_grouped_grad_input {
  static auto leaves() { return conv_dilated_grouped::leaves(); }
  static auto build(const auto& x, const auto& w) { return grad(sum(square(conv2d<2, padding::same, 2, 3>(x, w))), x); }
  static ext extents() { return conv_dilated_grouped::extents(); }
};
struct conv_dilated_grouped_grad_filter {
  static auto leaves() { return conv_dilated_grouped::leaves(); }
  static auto build(const auto& x, const auto& w) { return grad(sum(square(conv2d<1, padding::valid, 3, 3>(x, w))), w); }
  static ext extents() { return conv_dilated_grouped::extents(); }
};
struct conv_depthwise_grad_input {
  static auto leaves() {
    return std::tuple{placeholder<"x", float, shape<dyn, dyn, dyn, 6>>(), variable<"w", float, shape<3, 3, 1, 6>>()};
  }
  static auto build(const auto& x, const auto& w) { return grad(sum(square(conv2d<1, padding::same, 1, 6>(x, w))), x); }
  static ext extents() { return {{2, 7, 8, 6}, {3, 3, 1, 6}}; }
};
struct conv_same_f64 {
  static auto leaves() {
    return std::tuple{placeholder<"x", double, shape<dyn, dyn, dyn, 3>>(), variable<"w", double, shape<3, 3, 3, 5>>()};
  }
  static auto build(const auto& x, const auto& w) { return conv2d<2, padding::same>(x, w); }
  static ext extents() { return conv_valid::extents(); }
};
struct conv_stride3_grad_input {  // windows that skip input rows and columns (their gradient is 0)
  static auto leaves() { return conv_valid::leaves(); }
  static auto build(const auto& x, const auto& w) { return grad(sum(square(conv2d<3>(x, w))), x); }
  static ext extents() { return {{2, 10, 13, 3}, {3, 3, 3, 5}}; }
};
struct conv_even_kernel_same_grad_input {  // 2x2 `same`: the one padding row and column at the bottom and right
  static auto leaves() {
    return std::tuple{placeholder<"x", float, shape<dyn, dyn, dyn, 3>>(), variable<"w", float, shape<2, 2, 3, 4>>()};
  }
  static auto build(const auto& x, const auto& w) { return grad(sum(square(conv2d<1, padding::same>(x, w))), x); }
  static ext extents() { return {{3, 7, 6, 3}, {2, 2, 3, 4}}; }
};
struct conv_even_kernel_same_grad_filter {
  static auto leaves() { return conv_even_kernel_same_grad_input::leaves(); }
  static auto build(const auto& x, const auto& w) { return grad(sum(square(conv2d<1, padding::same>(x, w))), w); }
  static ext extents() { return conv_even_kernel_same_grad_input::extents(); }
};
struct max_pool {
  static auto leaves() { return std::tuple{placeholder<"x", float, shape<dyn, dyn, dyn, dyn>>()}; }
  static auto build(const auto& x) { return max_pool2d<2>(x); }
  static ext extents() { return {{2, 8, 10, 3}}; }
};
struct max_pool_overlapping {  // window 3, stride 2
  static auto leaves() { return max_pool::leaves(); }
  static auto build(const auto& x) { return max_pool2d<3, 2>(x); }
  static ext extents() { return {{2, 9, 11, 3}}; }
};
struct max_pool_grad {  // max_pool2d_backward
  static auto leaves() { return max_pool::leaves(); }
  static auto build(const auto& x) { return grad(sum(square(max_pool2d<3, 2>(x))), x); }
  static ext extents() { return {{2, 9, 11, 3}}; }
};
struct avg_pool {
  static auto leaves() { return max_pool::leaves(); }
  static auto build(const auto& x) { return avg_pool2d<2>(x); }
  static ext extents() { return max_pool::extents(); }
};
struct avg_pool_grad {  // avg_pool2d_backward
  static auto leaves() { return max_pool::leaves(); }
  static auto build(const auto& x) { return grad(sum(square(avg_pool2d<3, 2>(x))), x); }
  static ext extents() { return {{2, 9, 11, 3}}; }
};
// The mask is a function of (seed, element index) alone (ops/dropout.hpp): the GPU must give the
// CPU's values bit for bit.
struct dropout_training {
  static constexpr double tolerance = 0.0;
  static auto leaves() { return std::tuple{placeholder<"x", float, shape<dyn, dyn>>()}; }
  static auto build(const auto& x) { return dropout(x, 0.3, 1234); }
  static ext extents() { return {{37, 53}}; }
};
struct dropout_grad {  // the same op applied to the adjoint
  static auto leaves() { return dropout_training::leaves(); }
  static auto build(const auto& x) { return grad(sum(square(dropout(x, 0.5, 99))), x); }
  static ext extents() { return {{37, 53}}; }
};
struct cross_entropy_per_example {
  static auto leaves() {
    return std::tuple{placeholder<"logits", float, shape<dyn, 10>>(), placeholder<"y", std::int32_t, shape<dyn>>()};
  }
  static auto build(const auto& l, const auto& y) { return softmax_cross_entropy(l * 3.0f, y); }
  static ext extents() { return {{37, 10}, {37}}; }
  static range_t range(std::size_t leaf) { return leaf == 1 ? range_t{0, 9} : range_t{-1, 1}; }
};
struct cross_entropy_loss {
  static auto leaves() { return cross_entropy_per_example::leaves(); }
  static auto build(const auto& l, const auto& y) { return mean(softmax_cross_entropy(l * 3.0f, y)); }
  static ext extents() { return cross_entropy_per_example::extents(); }
  static range_t range(std::size_t leaf) { return cross_entropy_per_example::range(leaf); }
};
struct cross_entropy_grad {  // softmax_cross_entropy_backward
  static auto leaves() { return cross_entropy_per_example::leaves(); }
  static auto build(const auto& l, const auto& y) { return grad(mean(softmax_cross_entropy(l * 3.0f, y)), l); }
  static ext extents() { return cross_entropy_per_example::extents(); }
  static range_t range(std::size_t leaf) { return cross_entropy_per_example::range(leaf); }
};

// examples/cnn.cpp at 8x8 images: conv 3x3 (4 filters), relu, 2x2 max-pool, conv 3x3 (8 filters),
// relu, 2x2 max-pool, dense 32-16 relu, dropout, dense 16-10, mean softmax cross-entropy.
struct tiny_cnn {
  placeholder<"x", float, shape<dyn, 64>> x = placeholder<"x", float, shape<dyn, 64>>();
  placeholder<"y", std::int32_t, shape<dyn>> y = placeholder<"y", std::int32_t, shape<dyn>>();
  variable<"conv1/W", float, shape<3, 3, 1, 4>> W1 = variable<"conv1/W", float, shape<3, 3, 1, 4>>();
  variable<"conv1/b", float, shape<4>> b1 = variable<"conv1/b", float, shape<4>>();
  variable<"conv2/W", float, shape<3, 3, 4, 8>> W2 = variable<"conv2/W", float, shape<3, 3, 4, 8>>();
  variable<"conv2/b", float, shape<8>> b2 = variable<"conv2/b", float, shape<8>>();
  variable<"dense/W", float, shape<32, 16>> W3 = variable<"dense/W", float, shape<32, 16>>();
  variable<"dense/b", float, shape<16>> b3 = variable<"dense/b", float, shape<16>>();
  variable<"logits/W", float, shape<16, 10>> W4 = variable<"logits/W", float, shape<16, 10>>();
  variable<"logits/b", float, shape<10>> b4 = variable<"logits/b", float, shape<10>>();
  static constexpr double dropout_rate = 0.5;
  static constexpr std::uint64_t dropout_seed = 2026;

  auto loss() const {
    const auto images = reshape<shape<dyn, 8, 8, 1>>(x);
    const auto conv1 = scope("conv1", [&] { return max_pool2d<2>(relu(conv2d<1, padding::same>(images, W1) + b1)); });
    const auto conv2 = scope("conv2", [&] { return max_pool2d<2>(relu(conv2d<1, padding::same>(conv1, W2) + b2)); });
    const auto features = scope("dense", [&] { return relu(matmul(flatten(conv2), W3) + b3); });
    const auto logits = scope("logits", [&] { return matmul(dropout(features, dropout_rate, dropout_seed), W4) + b4; });
    return mean(softmax_cross_entropy(logits, y));
  }
  // One training step's loss and the gradients an optimiser applies.
  auto step() const {
    const auto L = loss();
    return std::tuple_cat(std::tuple{L}, grad(L, W1, b1, W2, b2, W3, b3, W4, b4));
  }
};

struct tiny_cnn_inputs {
  tensor<float, shape<dyn, 64>> x;
  tensor<std::int32_t, shape<dyn>> y;
  params store;
};
tiny_cnn_inputs random_tiny_cnn_inputs(std::size_t batch, unsigned seed);
// The step's outputs (loss, then the gradients in parameter order) on the CPU backend.
std::vector<host_array> tiny_cnn_step_on_cpu(const tiny_cnn_inputs& in);

}  // namespace symflow_cuda_test::cnn_cases

#define SYMFLOW_CUDA_CNN_CASES(X)                                                                          \
  X(conv_valid) X(conv_same_stride2) X(conv_bias_relu) X(conv_grad_input) X(conv_grad_filter)            \
  X(conv_grad_filter_valid) X(conv_same_f64) X(conv_stride3_grad_input) X(conv_even_kernel_same_grad_input) \
  X(conv_even_kernel_same_grad_filter) X(max_pool) X(max_pool_overlapping) X(max_pool_grad) X(avg_pool)   \
  X(avg_pool_grad) X(dropout_training) X(dropout_grad) X(cross_entropy_per_example) X(cross_entropy_loss) \
  X(cross_entropy_grad) X(conv_dilated_grouped) X(conv_dilated_grouped_grad_input)                        \
  X(conv_dilated_grouped_grad_filter) X(conv_depthwise_grad_input)
