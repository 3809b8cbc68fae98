#ifndef SYMFLOW_OPS_SIGMOID_HPP
#define SYMFLOW_OPS_SIGMOID_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>
#include <limits>

#include "../expr/elementwise.hpp"
#include "exp.hpp"
#include "packet_math.hpp"
#include "../expr/rewrite.hpp"
#endif

namespace symflow {
namespace ops {
struct sigmoid_op : floating_result {
  static constexpr std::string_view name = "sigmoid";
  static constexpr std::string_view onnx_op = "Sigmoid";  // its ONNX form (expr/onnx_form.hpp)
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "sigmoid(x) = 1 / (1 + exp(-x)), elementwise, computed by that formula (with exp's packet "
      "function on the host, see exp); f32 or f64. sigmoid(-Inf) = 0, sigmoid(+Inf) = 1, sigmoid(±0) = "
      "0.5, NaN stays NaN. Where exp(-x) overflows (x below about -88.72 in f32, -709.78 in f64) the "
      "host computes exp(x) instead, which sigmoid(x) rounds to there: a denormal, then exactly 0, "
      "whatever the SIMD width (device code gives 0 there). Gradient: g * y * (1 - y) (y = "
      "sigmoid(x)). Example: sigmoid(x) for x = [0, 1, -Inf] is [0.5, 0.7310586, 0].";
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
    if constexpr (simd::vectorized<T>) return simd::first_lane<T>([](const auto& p) { return packet(p); }, x);
#endif
    return T(1) / (T(1) + std::exp(-x));
  }
#ifndef SYMFLOW_SCALAR_ONLY
  // exp(-x) is exp's packet function, not Eigen's pexp, whose overflow depends on the packet width
  // (pexp(88.5f) is +Inf with AVX-512, 2.7e38 with AVX2). Where it overflows, 1 / (1 + exp(-x)) would
  // be 0 where sigmoid(x) rounds to exp(x), a denormal: those lanes take exp(x).
  template <class P>
  static P packet(const P& x) {
    namespace pm = simd::pm;
    using T = typename pm::unpacket_traits<P>::type;
    const P e = exp_op::packet(pm::pnegate(x));
    const P y = pm::pdiv(pm::pset1<P>(1), pm::padd(pm::pset1<P>(1), e));
    const P overflowed = pm::pcmp_eq(e, pm::pset1<P>(std::numeric_limits<T>::infinity()));
    if (!pm::predux_any(overflowed)) return y;
    return pm::pselect(overflowed, exp_op::packet(x), y);
  }
  // Derivative rule: adjoint of the operand given the upstream adjoint g and this node's value y.
  template <class G, class Y, class X>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const X& x) {
    return tuple_of(g * y * (1 - y));
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

// Results of sigmoid are >= 0 (used by domain-restricted rewrites such as exp(log x) -> x).
template <class... A>
inline constexpr bool known_nonnegative_v<elementwise<ops::sigmoid_op, A...>> = true;

template <unary_operand X>
auto sigmoid(const X& x, source_site where = source_site::current()) {
  return make_unary<ops::sigmoid_op>(x, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_SIGMOID_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, sigmoid_op)
#endif
