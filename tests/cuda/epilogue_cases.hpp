#pragma once
// act(matmul(a, b) + bias) at the root of an evaluation runs as one cuBLASLt GEMM with an epilogue
// (cuda/gemm_epilogue.hpp). These cases cover each epilogue, both operand orders of the addition,
// transposed, sliced (misaligned) and 3-D operands, f64, batch 1, odd sizes, TF32, a bias that
// broadcasts from one element (the runtime fallback) and gradients through such a layer; each is
// checked against the CPU backend on random inputs like the rest of the suite.
#include "cases.hpp"

namespace symflow_cuda_test::epilogue_cases {
using namespace symflow;
using cases::ext;

struct relu_bias {
  static auto leaves() {
    return std::tuple{placeholder<"x", float, shape<dyn, 53>>(), variable<"W", float, shape<53, 29>>(),
                      variable<"b", float, shape<29>>()};
  }
  static auto build(const auto& x, const auto& W, const auto& b) { return relu(matmul(x, W) + b); }
  static ext extents() { return {{37, 53}, {53, 29}, {29}}; }
};
struct bias_only {
  static auto leaves() { return relu_bias::leaves(); }
  static auto build(const auto& x, const auto& W, const auto& b) { return matmul(x, W) + b; }
  static ext extents() { return relu_bias::extents(); }
};
struct bias_first {
  static auto leaves() { return relu_bias::leaves(); }
  static auto build(const auto& x, const auto& W, const auto& b) { return relu(b + matmul(x, W)); }
  static ext extents() { return relu_bias::extents(); }
};
struct relu_only {
  static auto leaves() { return std::tuple{placeholder<"x", float, shape<dyn, 53>>(), variable<"W", float, shape<53, 29>>()}; }
  static auto build(const auto& x, const auto& W) { return relu(matmul(x, W)); }
  static ext extents() { return {{37, 53}, {53, 29}}; }
};
struct batch_one {
  static auto leaves() { return relu_bias::leaves(); }
  static auto build(const auto& x, const auto& W, const auto& b) { return relu(matmul(x, W) + b); }
  static ext extents() { return {{1, 53}, {53, 29}, {29}}; }
};
struct transposed_left {  // a column-major left operand, read in place
  static auto leaves() {
    return std::tuple{placeholder<"a", float, shape<53, dyn>>(), variable<"W", float, shape<53, 29>>(),
                      variable<"b", float, shape<29>>()};
  }
  static auto build(const auto& a, const auto& W, const auto& b) { return relu(matmul(transpose(a), W) + b); }
  static ext extents() { return {{53, 37}, {53, 29}, {29}}; }
};
struct transposed_right {
  static auto leaves() {
    return std::tuple{placeholder<"x", float, shape<dyn, 53>>(), variable<"V", float, shape<29, 53>>(),
                      variable<"b", float, shape<29>>()};
  }
  static auto build(const auto& x, const auto& V, const auto& b) { return relu(matmul(x, transpose(V)) + b); }
  static ext extents() { return {{37, 53}, {29, 53}, {29}}; }
};
struct sliced_rows {  // starts 3 rows of 53 floats in: 4-byte alignment only
  static auto leaves() { return relu_bias::leaves(); }
  static auto build(const auto& x, const auto& W, const auto& b) { return relu(matmul(slice(x, 3, 40), W) + b); }
  static ext extents() { return {{45, 53}, {53, 29}, {29}}; }
};
struct computed_operands {  // operands and bias computed by maps first
  static auto leaves() { return relu_bias::leaves(); }
  static auto build(const auto& x, const auto& W, const auto& b) { return relu(matmul(x * 2.0f, W - 0.5f) + b * b); }
  static ext extents() { return relu_bias::extents(); }
};
struct folded_3d {  // [B,M,K] x [K,N]: batches folded into rows
  static auto leaves() {
    return std::tuple{placeholder<"a", float, shape<dyn, dyn, 53>>(), variable<"W", float, shape<53, 29>>(),
                      variable<"b", float, shape<29>>()};
  }
  static auto build(const auto& a, const auto& W, const auto& b) { return relu(matmul(a, W) + b); }
  static ext extents() { return {{3, 37, 53}, {53, 29}, {29}}; }
};
struct permuted_3d {  // batches not stacked row-major: copied dense, then folded
  static auto leaves() {
    return std::tuple{placeholder<"a", float, shape<dyn, dyn, 53>>(), variable<"W", float, shape<53, 29>>(),
                      variable<"b", float, shape<29>>()};
  }
  static auto build(const auto& a, const auto& W, const auto& b) { return matmul(permute<1, 0, 2>(a), W) + b; }
  static ext extents() { return {{37, 3, 53}, {53, 29}, {29}}; }
};
struct relu_bias_f64 {
  static auto leaves() {
    return std::tuple{placeholder<"x", double, shape<dyn, 53>>(), variable<"W", double, shape<53, 29>>(),
                      variable<"b", double, shape<29>>()};
  }
  static auto build(const auto& x, const auto& W, const auto& b) { return relu(matmul(x, W) + b); }
  static ext extents() { return {{37, 53}, {53, 29}, {29}}; }
};
struct bias_only_f64 {
  static auto leaves() { return relu_bias_f64::leaves(); }
  static auto build(const auto& x, const auto& W, const auto& b) { return matmul(x, W) + b; }
  static ext extents() { return relu_bias_f64::extents(); }
};
struct relu_bias_tf32 {
  static constexpr bool allow_tf32 = true;
  static constexpr double tolerance = 5e-3;
  static auto leaves() {
    return std::tuple{placeholder<"x", float, shape<dyn, 512>>(), variable<"W", float, shape<512, 128>>(),
                      variable<"b", float, shape<128>>()};
  }
  static auto build(const auto& x, const auto& W, const auto& b) { return relu(matmul(x, W) + b); }
  static ext extents() { return {{256, 512}, {512, 128}, {128}}; }
};
struct one_element_bias {  // a bias of extent 1 broadcasts, which the epilogue cannot: GEMM + map
  static auto leaves() {
    return std::tuple{placeholder<"x", float, shape<dyn, 53>>(), variable<"W", float, shape<53, 29>>(),
                      placeholder<"b", float, shape<dyn>>()};
  }
  static auto build(const auto& x, const auto& W, const auto& b) { return relu(matmul(x, W) + b); }
  static ext extents() { return {{37, 53}, {53, 29}, {1}}; }
};

// Gradients of a loss through relu(x W + b): the forward layer is not a root here, and in the
// multi-output test below it is one next to its gradients.
struct dense_loss_grad_W {
  static auto leaves() { return relu_bias::leaves(); }
  static auto build(const auto& x, const auto& W, const auto& b) { return grad(mean(square(relu(matmul(x, W) + b))), W); }
  static ext extents() { return relu_bias::extents(); }
};
struct dense_loss_grad_b {
  static auto leaves() { return relu_bias::leaves(); }
  static auto build(const auto& x, const auto& W, const auto& b) { return grad(mean(square(relu(matmul(x, W) + b))), b); }
  static ext extents() { return relu_bias::extents(); }
};

}  // namespace symflow_cuda_test::epilogue_cases

#define SYMFLOW_CUDA_EPILOGUE_CASES(X)                                                                      \
  X(relu_bias) X(bias_only) X(bias_first) X(relu_only) X(batch_one) X(transposed_left) X(transposed_right) \
      X(sliced_rows) X(computed_operands) X(folded_3d) X(permuted_3d) X(relu_bias_f64) X(bias_only_f64)     \
          X(relu_bias_tf32) X(one_element_bias) X(dense_loss_grad_W) X(dense_loss_grad_b)
