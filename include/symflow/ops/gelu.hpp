#ifndef SYMFLOW_OPS_GELU_HPP
#define SYMFLOW_OPS_GELU_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>

#include "../expr/elementwise.hpp"
#include "add.hpp"
#include "erf.hpp"
#include "exp.hpp"
#include "mul.hpp"
#include "square.hpp"
#include "../expr/onnx_form.hpp"
#endif

namespace symflow {
namespace ops {
struct gelu_op : floating_result {
  static constexpr std::string_view name = "gelu";
#ifndef SYMFLOW_SCALAR_ONLY
  // ONNX Gelu arrives in opset 20; in opset 17: x * 0.5 * (1 + erf(x / sqrt(2))), PyTorch's
  // formula (it cancels for x below about -5, where this op keeps the tiny values).
  static void write_onnx(onnx_node_writer& w) {
    const dtype t = w.operand_dtype(0);
    const std::string half_x = w.add("Mul", {w.operand(0), w.scalar(t, 0.5)});
    const std::string phi = w.add("Add", {w.scalar(t, 1.0),
                                          w.add("Erf", {w.add("Mul", {w.operand(0), w.scalar(t, 0.70710678118654752440)})})});
    w.add("Mul", {half_x, phi}, {}, true);
  }
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "gelu(x) = x * Phi(x), the exact Gaussian error linear unit (Phi: the standard normal CDF), "
      "elementwise; f32 or f64. PyTorch's gelu (approximate='none') and ONNX Gelu, computed as 0.5 * x "
      "* erfc(-x / sqrt(2)), the same function as their 0.5 * x * (1 + erf(x / sqrt(2))) without its "
      "cancellation for negative x: within a few ulps everywhere, where PyTorch's formula loses digits "
      "below about -2 and gives 0 below about -5.5 (f32) or -8.3 (f64); here the tiny negative values "
      "remain until they underflow to -0. gelu(+Inf) = +Inf, gelu(-Inf) = NaN (-Inf * 0, as in "
      "PyTorch), gelu(-0) = -0, NaN stays NaN. No SIMD form (std::erfc). Gradient: g * (Phi(x) + x * "
      "phi(x)), phi(x) = exp(-x^2 / 2) / sqrt(2 pi). Example: gelu(x) for x = [-1, 0, 1, 3] is "
      "[-0.15865526, 0, 0.8413447, 2.9959502].";
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  // Costs more to recompute than to read back: a repeat within one fused loop reuses the value.
  static constexpr bool costly = true;
#endif
  // Phi(x) = erfc(-x / sqrt(2)) / 2: 1 + erf(x / sqrt(2)) would cancel for negative x (40 ulps lost
  // at x = -2.5 in f64, all of them below -5.5 in f32). In the left tail erfc(a) ~ exp(-a^2) turns
  // the rounding error of a = -x / sqrt(2) into 2 a^2 times as large a relative error (90 ulps at
  // x = -12.7 in f32): on the host a's rounding error (fma) and that of the constant are carried in
  // a first-order correction, erfc(a + d) ~ erfc(a) - d * 2/sqrt(pi) * exp(-a^2). std::erfc on host
  // and device (device code without the correction); it has no exact SIMD form, so neither has
  // gelu: SIMD loops call this function lane by lane.
  template <class T>
  SYMFLOW_HD static T apply(T x) {
#if defined(SYMFLOW_SCALAR_ONLY) || defined(__CUDA_ARCH__)
    return x * T(0.5) * std::erfc(-x * T(0.70710678118654752440));
#else
    constexpr long double c = 0.707106781186547524400844362104849039L;  // sqrt(1/2)
    constexpr T c_hi = T(c), c_lo = T(c - static_cast<long double>(c_hi));
    const T a = -x * c_hi;
    T p = std::erfc(a);
    if (std::isfinite(a))
      p -= (std::fma(-x, c_hi, -a) - x * c_lo) * T(1.12837916709551257390) * std::exp(-a * a);
    return x * T(0.5) * p;
#endif
  }
#ifndef SYMFLOW_SCALAR_ONLY
  // Derivative rule: adjoint of the operand given the upstream adjoint g and this node's value y.
  template <class G, class Y, class X>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const X& x) {
    using T = value_type_of<G>;
    const auto cdf = T(0.5) * (1 + erf(x * T(0.70710678118654752440)));
    const auto pdf = T(0.39894228040143267794) * exp(square(x) * T(-0.5));  // 1 / sqrt(2 pi)
    return tuple_of(g * (cdf + x * pdf));
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <unary_operand X>
auto gelu(const X& x, source_site where = source_site::current()) {
  return make_unary<ops::gelu_op>(x, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_GELU_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, gelu_op)
#endif
