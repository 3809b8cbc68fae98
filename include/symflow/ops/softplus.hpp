#ifndef SYMFLOW_OPS_SOFTPLUS_HPP
#define SYMFLOW_OPS_SOFTPLUS_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>

#include "../expr/elementwise.hpp"
#include "exp.hpp"
#include "packet_math.hpp"
#include "../expr/rewrite.hpp"
#endif

namespace symflow {
namespace ops {
struct softplus_op : floating_result {
  static constexpr std::string_view name = "softplus";
  static constexpr std::string_view onnx_op = "Softplus";  // its ONNX form (expr/onnx_form.hpp)
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "softplus(x) = log(1 + exp(x)), elementwise, computed as max(x, 0) + log1p(exp(-|x|)) so that it "
      "does not overflow; f32 or f64. softplus(+Inf) = +Inf, softplus(0) = log 2, NaN stays NaN. f64 "
      "uses std:: math. f32 on the host computes exp(-|x|) with exp's packet function (Eigen's "
      "vectorized exp in its normal range, std::exp outside it: see exp) and log1p with Eigen's, so "
      "for x below -87 the result is std::exp(x): denormals from about -87.34, exactly 0 below about "
      "-103.97, and softplus(-Inf) = 0, whatever the SIMD width. Gradient: g * sigmoid(x). Example: "
      "softplus(x) for x = [0, 1, 200] is [0.6931472, 1.3132617, 200].";
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
    return std::max(x, T(0)) + std::log1p(std::exp(-std::abs(x)));
  }
#ifndef SYMFLOW_SCALAR_ONLY
  // Eigen 3.4 vectorizes this function for float only.
  template <class T>
  static constexpr bool packet_dtype_ok = std::is_same_v<T, float>;
  // exp(-|x|) is exp's packet function, not Eigen's pexp: past exp's normal range pexp depends on
  // the packet width (2.9e-39 for exp(-Inf) with SSE/AVX2, 0 from -87.9 on with AVX-512), exp_op's
  // falls back to std::exp there. log1p of the tiny value that follows is that value.
  template <class P>
  static P packet(const P& x) {
    namespace pm = simd::pm;
    return pm::padd(pm::pmax(x, pm::pzero(x)), pm::plog1p(exp_op::packet(pm::pnegate(pm::pabs(x)))));
  }
  // Derivative rule: adjoint of the operand given the upstream adjoint g and this node's value y.
  template <class G, class Y, class X>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const X& x) {
    return tuple_of(g * sigmoid(x));
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

// Results of softplus are >= 0 (used by domain-restricted rewrites such as exp(log x) -> x).
template <class... A>
inline constexpr bool known_nonnegative_v<elementwise<ops::softplus_op, A...>> = true;

template <unary_operand X>
auto softplus(const X& x, source_site where = source_site::current()) {
  return make_unary<ops::softplus_op>(x, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_SOFTPLUS_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, softplus_op)
#endif
