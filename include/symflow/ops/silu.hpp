#ifndef SYMFLOW_OPS_SILU_HPP
#define SYMFLOW_OPS_SILU_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>
#include <limits>

#include "../expr/elementwise.hpp"
#include "add.hpp"
#include "mul.hpp"
#include "sigmoid.hpp"
#include "sub.hpp"
#include "../expr/onnx_form.hpp"
#endif

namespace symflow {
namespace ops {
struct silu_op : floating_result {
  static constexpr std::string_view name = "silu";
#ifndef SYMFLOW_SCALAR_ONLY
  // ONNX: x * sigmoid(x).
  static void write_onnx(onnx_node_writer& w) {
    w.add("Mul", {w.operand(0), w.add("Sigmoid", {w.operand(0)})}, {}, true);
  }
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "silu(x) = x * sigmoid(x) (also called swish), elementwise; f32 or f64. Computed as PyTorch's "
      "silu does, x / (1 + exp(-x)), with std::exp (scalar code only, no SIMD form), so silu(-Inf) = "
      "NaN (as in PyTorch), silu(+Inf) = +Inf, silu(-0) = -0, NaN stays NaN. Where exp(-x) overflows (x "
      "below about -88.72 in f32, -709.78 in f64) it is x * exp(x), tiny and negative until it "
      "underflows to -0 (PyTorch's formula gives -0 there at once). Gradient: g * s * (1 + x * (1 - s)) "
      "(s = sigmoid(x)). Example: silu(x) for x = [-1, 0, 1, 3] is [-0.26894143, 0, 0.7310586, "
      "2.8577225].";
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  // Costs more to recompute than to read back: a repeat within one fused loop reuses the value.
  static constexpr bool costly = true;
#endif
  // std::exp everywhere, so no packet form: exp's packet function (Eigen's pexp) gives bits that
  // differ by an ulp between AVX2 and AVX-512 builds, and a silu result must not depend on the SIMD
  // width. SIMD loops call this function lane by lane. Where exp(-x) overflows, silu(x) rounds to
  // x * exp(x), a tiny value: computed as (x * h) * h with h = exp(x / 2), which stays normal there,
  // so only the last product rounds into the denormals (exp(x) itself would be a denormal already).
  template <class T>
  SYMFLOW_HD static T apply(T x) {
    const T e = std::exp(-x);
    if (e != std::numeric_limits<T>::infinity()) return x / (T(1) + e);
    const T h = std::exp(x * T(0.5));
    return x * h * h;
  }
#ifndef SYMFLOW_SCALAR_ONLY
  // Derivative rule: adjoint of the operand given the upstream adjoint g and this node's value y.
  template <class G, class Y, class X>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const X& x) {
    const auto s = sigmoid(x);
    return tuple_of(g * (s * (1 + x * (1 - s))));
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <unary_operand X>
auto silu(const X& x, source_site where = source_site::current()) {
  return make_unary<ops::silu_op>(x, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_SILU_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, silu_op)
#endif
