#pragma once
// Layer, RMS and batch normalisation, composed of listed ops (mean, sub, square, rsqrt, mul, add):
// they fuse with their neighbours, differentiate (to any order) and lower to the graph value with no
// rules of their own. With their axes named they take graph handles too (runtime/builder.hpp).
#include <utility>

#include "add.hpp"
#include "mean.hpp"
#include "mul.hpp"
#include "rsqrt.hpp"
#include "square.hpp"
#include "sub.hpp"
#include "../expr/scope.hpp"
#include "expand_as.hpp"
#include "sum.hpp"

namespace symflow {

namespace normalization_detail {
// (x - mean(x)) / sqrt(var(x) + eps) * gamma + beta, mean and biased variance over `ax`: layer and
// batch normalisation differ in their axes only.
template <class X, class G, class B, int... Axes>
auto standardized(const X& x, const G& gamma, const B& beta, double eps, axes_t<Axes...> ax) {
  auto centered = x - mean(x, ax, keepdims);
  auto inverse_deviation = rsqrt(mean(square(centered), ax, keepdims) + eps);
  return centered * inverse_deviation * gamma + beta;
}
// axes<0, 1, ..., R - 2>: every axis but the last (the channels of NHWC images, the features of
// [N, D] rows).
template <std::size_t R, std::size_t... I>
constexpr auto all_but_last(std::index_sequence<I...>) {
  return axes_t<int(I)...>{};
}
template <class X>
using batch_axes_t = decltype(all_but_last<shape_of<X>::rank>(std::make_index_sequence<shape_of<X>::rank - 1>{}));
}  // namespace normalization_detail

// layer_norm(x, gamma, beta, eps) = (x - mean(x)) / sqrt(var(x) + eps) * gamma + beta, with mean
// and (biased) variance over the last axis, or over `ax` (axes<-2, -1>: the last two), as PyTorch's
// layer_norm and ONNX LayerNormalization (axis = -1, epsilon = 1e-5 by default). gamma and beta
// broadcast against x (shape [D] for the last axis); either may be a plain number.
template <class X, class G, class B, int... Axes>
  requires unary_operand<X>
auto layer_norm(const X& x, const G& gamma, const B& beta, double eps, axes_t<Axes...> ax) {
  static_assert(sizeof...(Axes) > 0, "symflow: layer_norm: name the normalised axes (axes<-1> by default)");
  name_scope s("layer_norm");
  return normalization_detail::standardized(x, gamma, beta, eps, ax);
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


// batch_norm(x, gamma, beta, eps) in training mode: x normalised with the mean and (biased) variance
// of the batch over every axis but the last (NHWC images: over N, H and W, per channel), as
// PyTorch's batch_norm(training=True) and ONNX BatchNormalization with training_mode = 1 (epsilon =
// 1e-5 by default); `ax` names other axes. The same formula as layer_norm over other axes: it fuses
// and differentiates without rules of its own. The running averages a model keeps for inference
// come from batch_statistics.
template <class X, class G, class B, int... Axes>
  requires unary_operand<X>
auto batch_norm(const X& x, const G& gamma, const B& beta, double eps, axes_t<Axes...> ax) {
  static_assert(sizeof...(Axes) > 0, "symflow: batch_norm: name the axes the statistics are taken over");
  name_scope s("batch_norm");
  return normalization_detail::standardized(x, gamma, beta, eps, ax);
}
template <expression X, class G, class B>
auto batch_norm(const X& x, const G& gamma, const B& beta, double eps = 1e-5) {
  static_assert(shape_of<X>::rank >= 2, "symflow: batch_norm: x needs a batch axis and a channel axis");
  return batch_norm(x, gamma, beta, eps, normalization_detail::batch_axes_t<X>{});
}

// batch_norm_inference(x, mean, variance, gamma, beta, eps): x normalised with given statistics (a
// model's running averages), as PyTorch's batch_norm(training=False) and ONNX BatchNormalization;
// every operand broadcasts against x (shape [C] for the last axis).
template <class X, class M, class V, class G, class B>
  requires unary_operand<X>
auto batch_norm_inference(const X& x, const M& mean_value, const V& variance, const G& gamma, const B& beta,
                          double eps = 1e-5) {
  name_scope s("batch_norm");
  return (x - mean_value) * rsqrt(variance + eps) * gamma + beta;
}

// The statistics a training step feeds into running averages: the batch mean and the unbiased
// variance (divided by n - 1, as PyTorch's running_var) over every axis but the last, as a pair of
// expressions. running = (1 - momentum) * running + momentum * statistic, as PyTorch (momentum 0.1).
template <expression X>
auto batch_statistics(const X& x) {
  static_assert(shape_of<X>::rank >= 2, "symflow: batch_statistics: x needs a batch axis and a channel axis");
  name_scope s("batch_statistics");
  constexpr auto ax = normalization_detail::batch_axes_t<X>{};
  auto m = mean(x, ax, keepdims);
  auto squares = sum(square(x - m), ax);
  // n / (n - 1) from the counts at run time: sum(1) over the axes is n.
  auto n = sum(expand_as(one<value_type_of<X>>{}, x), ax);
  return std::pair{mean(x, ax), squares / (n - one<value_type_of<X>>{})};
}

}  // namespace symflow
