#pragma once
// Model-block ops on the GPU against the CPU backend: the activations added for model blocks (erf,
// exact and tanh GELU, SiLU, ELU, SELU, leaky ReLU, softsign, hard sigmoid), rounding and clipping,
// logical ops, layer and RMS normalisation, scaled dot-product attention, and their gradients.
// They reach the GPU through the backend's generic evaluators (device functions of the op records,
// reductions, GEMMs), so these cases check that nothing of theirs is CPU-only.
#include "cases.hpp"

namespace symflow_cuda_test::cases {

struct activations {
  static auto leaves() { return std::tuple{placeholder<"x", float, shape<dyn, dyn>>()}; }
  static auto build(const auto& x) {
    return erf(x) + gelu(x) + gelu_tanh(x) + silu(x) + elu(x) + selu(x) + leaky_relu(x) + softsign(x) +
           hard_sigmoid(x);
  }
  static ext extents() { return {{131, 67}}; }
  static range_t range(std::size_t) { return {-6, 6}; }
};
struct rounding_clip {
  static auto leaves() { return std::tuple{placeholder<"x", float, shape<dyn>>()}; }
  static auto build(const auto& x) { return floor(x) + 2.0f * ceil(x) + 4.0f * round(x) + clip(x, -1.0f, 2.0f); }
  static ext extents() { return {{10007}}; }
  static range_t range(std::size_t) { return {-9, 9}; }
};
struct logical_select {
  static auto leaves() { return std::tuple{placeholder<"a", float, shape<dyn>>(), placeholder<"b", float, shape<dyn>>()}; }
  static auto build(const auto& a, const auto& b) {
    return where(logical_or(logical_and(a > 0.0f, logical_not(b > 0.0f)), a < -0.5f), a, b);
  }
  static ext extents() { return {{5003}, {5003}}; }
};
struct layer_norm_rows {
  static auto leaves() {
    return std::tuple{placeholder<"x", float, shape<dyn, dyn>>(), placeholder<"g", float, shape<dyn>>(),
                      placeholder<"b", float, shape<dyn>>()};
  }
  static auto build(const auto& x, const auto& g, const auto& b) { return layer_norm(x, g, b); }
  static ext extents() { return {{129, 301}, {301}, {301}}; }
  static constexpr double tolerance = 1e-4;
};
struct rms_norm_last_two {
  static auto leaves() { return std::tuple{placeholder<"x", float, shape<dyn, dyn, dyn>>()}; }
  static auto build(const auto& x) { return rms_norm(x, 1.5f, 1e-5, axes<-2, -1>); }
  static ext extents() { return {{7, 13, 65}}; }
  static constexpr double tolerance = 1e-4;
};
struct grad_layer_norm_x {
  static auto leaves() {
    return std::tuple{placeholder<"x", float, shape<dyn, dyn>>(), placeholder<"g", float, shape<dyn>>(),
                      placeholder<"w", float, shape<dyn, dyn>>()};
  }
  static auto build(const auto& x, const auto& g, const auto& w) { return grad(sum(layer_norm(x, g, 0.5f) * w), x); }
  static ext extents() { return {{67, 129}, {129}, {67, 129}}; }
  static constexpr double tolerance = 1e-3;
};
struct grad_layer_norm_gamma {
  static auto leaves() {
    return std::tuple{placeholder<"x", float, shape<dyn, dyn>>(), placeholder<"g", float, shape<dyn>>(),
                      placeholder<"w", float, shape<dyn, dyn>>()};
  }
  static auto build(const auto& x, const auto& g, const auto& w) { return grad(sum(layer_norm(x, g, 0.5f) * w), g); }
  static ext extents() { return {{67, 129}, {129}, {67, 129}}; }
  static constexpr double tolerance = 1e-3;
};
struct grad_activations {
  static auto leaves() { return std::tuple{placeholder<"x", float, shape<dyn>>()}; }
  static auto build(const auto& x) { return grad(sum(gelu(x) * silu(x) + erf(x) + softsign(x) + elu(x)), x); }
  static ext extents() { return {{4099}}; }
  static range_t range(std::size_t) { return {-4, 4}; }
  static constexpr double tolerance = 1e-4;
};
struct attention_causal {
  static auto leaves() {
    return std::tuple{placeholder<"q", float, shape<3, 17, 32>>(), placeholder<"k", float, shape<3, 17, 32>>(),
                      placeholder<"v", float, shape<3, 17, 32>>()};
  }
  static auto build(const auto& q, const auto& k, const auto& v) {
    return scaled_dot_product_attention(q, k, v, causal);
  }
  static ext extents() { return {{3, 17, 32}, {3, 17, 32}, {3, 17, 32}}; }
  static constexpr double tolerance = 1e-4;
};
struct grad_attention_q {
  static auto leaves() {
    return std::tuple{placeholder<"q", float, shape<2, 9, 16>>(), placeholder<"k", float, shape<2, 11, 16>>(),
                      placeholder<"v", float, shape<2, 11, 16>>()};
  }
  static auto build(const auto& q, const auto& k, const auto& v) {
    return grad(sum(square(scaled_dot_product_attention(q, k, v))), q);
  }
  static ext extents() { return {{2, 9, 16}, {2, 11, 16}, {2, 11, 16}}; }
  static constexpr double tolerance = 1e-3;
};

}  // namespace symflow_cuda_test::cases

// Two parts, one translation unit each (model_blocks_test.cu, model_blocks_grad_test.cu): together
// nvcc needed 75 s and 3 GB for them.
#define SYMFLOW_CUDA_MODEL_BLOCK_OP_CASES(X)                                                           \
  X(activations) X(rounding_clip) X(logical_select) X(layer_norm_rows) X(rms_norm_last_two)        \
  X(attention_causal) X(grad_activations)
#define SYMFLOW_CUDA_MODEL_BLOCK_GRADIENT_CASES(X) X(grad_layer_norm_x) X(grad_layer_norm_gamma) X(grad_attention_q)
#define SYMFLOW_CUDA_MODEL_BLOCK_CASES(X) \
  SYMFLOW_CUDA_MODEL_BLOCK_OP_CASES(X) SYMFLOW_CUDA_MODEL_BLOCK_GRADIENT_CASES(X)
