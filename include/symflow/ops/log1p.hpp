#ifndef SYMFLOW_OPS_LOG1P_HPP
#define SYMFLOW_OPS_LOG1P_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>

#include "../expr/elementwise.hpp"
#include "packet_math.hpp"
#include "../expr/onnx_form.hpp"
#endif

namespace symflow {
namespace ops {
struct log1p_op : floating_result {
  static constexpr std::string_view name = "log1p";
#ifndef SYMFLOW_SCALAR_ONLY
  // ONNX has no log1p: log(1 + x), which loses the digits of x below about 1e-8 (f32: 1e-4)
  // relative to 1.
  static void write_onnx(onnx_node_writer& w) {
    w.add("Log", {w.add("Add", {w.operand(0), w.scalar(w.operand_dtype(0), 1.0)})}, {}, true);
  }
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "log1p(x) = log(1 + x), accurate for small x, elementwise; f32 (Eigen's vectorized log1p on the "
      "host) or f64 (std::log1p). log1p(-1) = -Inf, log1p(x) for x < -1 is NaN, log1p(-0) = -0, "
      "log1p(+Inf) = +Inf, NaN stays NaN. Gradient: g / (x + 1). Example: log1p(x) for x = [0, 1, -1] "
      "is [0, 0.6931472, -Inf].";
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  // Costs more to recompute than to read back: a repeat within one fused loop reuses the value.
  static constexpr bool costly = true;
#endif
  // On the host, where it has a packet form for T, lane 0 of that form (simd::first_lane): the
  // same bits in a SIMD body and a scalar tail. std:: math elsewhere (double where Eigen has no
  // packet form, device code).
  template <class T>
  SYMFLOW_HD static T apply(T x) {
#if !defined(SYMFLOW_SCALAR_ONLY) && !defined(__CUDA_ARCH__)
    if constexpr (simd::vectorized<T> && packet_dtype_ok<T>) return simd::first_lane<T>([](const auto& p) { return packet(p); }, x);
#endif
    return std::log1p(x);
  }
#ifndef SYMFLOW_SCALAR_ONLY
  // Eigen 3.4 vectorizes this function for float only.
  template <class T>
  static constexpr bool packet_dtype_ok = std::is_same_v<T, float>;
  template <class P>
  static P packet(const P& x) {
    return simd::pm::plog1p(x);
  }
  // Derivative rule: adjoint of the operand given the upstream adjoint g and this node's value y.
  template <class G, class Y, class X>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const X& x) {
    return tuple_of(g / (x + 1));
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <unary_operand X>
auto log1p(const X& x, source_site where = source_site::current()) {
  return make_unary<ops::log1p_op>(x, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_LOG1P_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, log1p_op)
#endif
