#pragma once
// Activations composed of listed ops, so they fuse into the surrounding loop, differentiate and
// lower to the graph value with no rules of their own. Each serves typed expressions and graph
// handles alike (runtime/builder.hpp), as the ops' own functions do.
#include "add.hpp"
#include "clip.hpp"
#include "mul.hpp"
#include "tanh.hpp"
#include "../expr/scope.hpp"

namespace symflow {

// hard_sigmoid(x, alpha, beta) = clip(alpha * x + beta, 0, 1), elementwise (ONNX HardSigmoid, whose
// defaults are alpha = 0.2, beta = 0.5; PyTorch's hardsigmoid is alpha = 1/6). NaN stays NaN.
template <unary_operand X>
auto hard_sigmoid(const X& x, double alpha = 0.2, double beta = 0.5) {
  name_scope s("hard_sigmoid");
  return clip(x * alpha + beta, 0.0, 1.0);
}

// hard_swish(x) = x * hard_sigmoid(x, 1/6, 1/2) = x * clip(x / 6 + 1/2, 0, 1) (ONNX HardSwish,
// PyTorch's hardswish; theirs computes x * relu6(x + 3) / 6, which rounds differently by an ulp).
template <unary_operand X>
auto hard_swish(const X& x) {
  name_scope s("hard_swish");
  return x * clip(x * (1.0 / 6.0) + 0.5, 0.0, 1.0);
}

// gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), the tanh approximation of gelu
// (PyTorch's gelu(approximate='tanh'), ONNX Gelu with approximate="tanh"). Like theirs it cancels to
// 0 for x below about -9 (f32), where the exact gelu (gelu.hpp) keeps tiny negative values.
template <unary_operand X>
auto gelu_tanh(const X& x) {
  name_scope s("gelu_tanh");
  constexpr double sqrt_2_over_pi = 0.79788456080286535587989211986876;
  return 0.5 * x * (1.0 + tanh(sqrt_2_over_pi * (x + 0.044715 * (x * x * x))));
}

}  // namespace symflow
