#ifndef SYMFLOW_OPS_RSQRT_HPP
#define SYMFLOW_OPS_RSQRT_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>

#include "../expr/elementwise.hpp"
#include "packet_math.hpp"
#include "../expr/onnx_form.hpp"
#endif

namespace symflow {
namespace ops {
struct rsqrt_op : floating_result {
  static constexpr std::string_view name = "rsqrt";
#ifndef SYMFLOW_SCALAR_ONLY
  // ONNX: 1 / sqrt(x) (two roundings where this op has one).
  static void write_onnx(onnx_node_writer& w) { w.add("Reciprocal", {w.add("Sqrt", {w.operand(0)})}, {}, true); }
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "rsqrt(x) = 1 / sqrt(x), elementwise; f32 or f64, with two IEEE roundings (a correctly rounded "
      "sqrt, then a division, not a hardware estimate; SIMD and scalar forms agree bit for bit). "
      "rsqrt(+0) = +Inf, rsqrt(-0) = -Inf, rsqrt(+Inf) = 0, a negative x gives NaN, NaN stays NaN. "
      "Gradient: g * -0.5 * y^3 (y = rsqrt(x)). Example: rsqrt(x) for x = [4, 0.25, 0] is [0.5, 2, "
      "+Inf].";
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  // Costs more to recompute than to read back: a repeat within one fused loop reuses the value.
  static constexpr bool costly = true;
#endif
  // 1 / sqrt(x) with two IEEE roundings in both forms (Eigen's prsqrt is an estimate refined by
  // Newton steps: off by ulps, and wrong for denormals), so the forms agree bit for bit.
  template <class T>
  SYMFLOW_HD static T apply(T x) {
    return T(1) / std::sqrt(x);
  }
#ifndef SYMFLOW_SCALAR_ONLY
  template <class P>
  static P packet(const P& x) {
    return simd::pm::pdiv(simd::pm::pset1<P>(1), simd::exact_sqrt(x));
  }
  // Derivative rule: adjoint of the operand given the upstream adjoint g and this node's value y.
  template <class G, class Y, class X>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const X& x) {
    return tuple_of(g * -0.5 * y * y * y);
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <unary_operand X>
auto rsqrt(const X& x, source_site where = source_site::current()) {
  return make_unary<ops::rsqrt_op>(x, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_RSQRT_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, rsqrt_op)
#endif
