#pragma once
// Layer and RMS normalisation, composed of listed ops (mean, sub, square, rsqrt, mul, add): they
// fuse with their neighbours, differentiate (to any order) and lower to the graph value with no
// rules of their own, on typed expressions and graph handles alike (runtime/builder.hpp).
#include "add.hpp"
#include "mean.hpp"
#include "mul.hpp"
#include "rsqrt.hpp"
#include "square.hpp"
#include "sub.hpp"
#include "../expr/scope.hpp"

namespace symflow {

// layer_norm(x, gamma, beta, eps) = (x - mean(x)) / sqrt(var(x) + eps) * gamma + beta, with mean
// and (biased) variance over the last axis, or over `ax` (axes<-2, -1>: the last two), as PyTorch's
// layer_norm and ONNX LayerNormalization (axis = -1, epsilon = 1e-5 by default). gamma and beta
// broadcast against x (shape [D] for the last axis); either may be a plain number.
template <class X, class G, class B, int... Axes>
  requires unary_operand<X>
auto layer_norm(const X& x, const G& gamma, const B& beta, double eps, axes_t<Axes...> ax) {
  static_assert(sizeof...(Axes) > 0, "symflow: layer_norm: name the normalised axes (axes<-1> by default)");
  name_scope s("layer_norm");
  auto centered = x - mean(x, ax, keepdims);
  auto inverse_deviation = rsqrt(mean(square(centered), ax, keepdims) + eps);
  return centered * inverse_deviation * gamma + beta;
}
template <class X, class G, class B>
  requires unary_operand<X>
auto layer_norm(const X& x, const G& gamma, const B& beta, double eps = 1e-5) {
  return layer_norm(x, gamma, beta, eps, axes<-1>);
}

// rms_norm(x, gamma, eps) = x / sqrt(mean(x^2) + eps) * gamma over the last axis (or `ax`), as
// PyTorch's RMSNorm and ONNX RMSNormalization (epsilon = 1e-5 by default). No centring, no bias.
template <class X, class G, int... Axes>
  requires unary_operand<X>
auto rms_norm(const X& x, const G& gamma, double eps, axes_t<Axes...> ax) {
  static_assert(sizeof...(Axes) > 0, "symflow: rms_norm: name the normalised axes (axes<-1> by default)");
  name_scope s("rms_norm");
  return x * rsqrt(mean(square(x), ax, keepdims) + eps) * gamma;
}
template <class X, class G>
  requires unary_operand<X>
auto rms_norm(const X& x, const G& gamma, double eps = 1e-5) {
  return rms_norm(x, gamma, eps, axes<-1>);
}

}  // namespace symflow
