#ifndef SYMFLOW_OPS_TANH_HPP
#define SYMFLOW_OPS_TANH_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>

#include "../expr/elementwise.hpp"
#include "packet_math.hpp"
#endif

namespace symflow {
namespace ops {
struct tanh_op : floating_result {
  static constexpr std::string_view name = "tanh";
  static constexpr std::string_view onnx_op = "Tanh";  // its ONNX form (expr/onnx_form.hpp)
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "tanh(x), elementwise; f32 (Eigen's vectorized tanh on the host: the same bits in SIMD and "
      "scalar code) or f64 (std::tanh). tanh(±Inf) = ±1, tanh(-0) = -0, NaN stays NaN; large |x| "
      "saturates to ±1. Gradient: g * (1 - y^2) (y = tanh(x)). Example: tanh(x) for x = [0, 1, -Inf] "
      "is [0, 0.76159418, -1].";
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
    return std::tanh(x);
  }
#ifndef SYMFLOW_SCALAR_ONLY
  // Eigen 3.4 vectorizes this function for float only.
  template <class T>
  static constexpr bool packet_dtype_ok = std::is_same_v<T, float>;
  template <class P>
  static P packet(const P& x) {
    return simd::pm::ptanh(x);
  }
  // Derivative rule: adjoint of the operand given the upstream adjoint g and this node's value y.
  template <class G, class Y, class X>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const X& x) {
    return tuple_of(g * (1 - y * y));
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <unary_operand X>
auto tanh(const X& x, source_site where = source_site::current()) {
  return make_unary<ops::tanh_op>(x, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_TANH_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, tanh_op)
#endif
