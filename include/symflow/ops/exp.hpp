#ifndef SYMFLOW_OPS_EXP_HPP
#define SYMFLOW_OPS_EXP_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>

#include "../expr/elementwise.hpp"
#include "packet_math.hpp"
#include "../expr/rewrite.hpp"
#endif

namespace symflow {
namespace ops {
#ifndef SYMFLOW_SCALAR_ONLY
struct log_op;
#endif
struct exp_op : floating_result {
  static constexpr std::string_view name = "exp";
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "exp(x) = e^x, elementwise; f32 or f64. exp(-Inf) = 0, exp(+Inf) = +Inf, exp(±0) = 1, NaN stays "
      "NaN. On the host it is Eigen's vectorized exp where the result is a normal number (x in [-87, "
      "88] for f32, [-708, 709] for f64; not necessarily std::exp's bits) and std::exp outside that "
      "range (denormals, then exactly 0 below about -103.97 in f32, +Inf above about 88.72), so a "
      "result does not depend on the SIMD width or the element's position. simplify: exp(0) -> 1, and "
      "exp(log x) -> x only where x is known to be non-negative. Gradient: g * y (y = exp(x)). "
      "Example: exp(x) for x = [0, 1, -Inf] is [1, 2.7182817, 0].";
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
    return std::exp(x);
  }
#ifndef SYMFLOW_SCALAR_ONLY
  // Eigen's pexp is used where exp(x) is a normal number. Outside that range it depends on the
  // packet width: with SSE/AVX2 float packets it clamps its argument, so exp(-138) and even exp(-inf)
  // are 2.9e-39, with AVX-512 it flushes to 0 from -87.9 on, and double pexp never reaches 0 (exp(-2000)
  // gave 5.6e-309); std::exp gives denormals, then exactly 0 (below -103.97 in float), and +Inf past
  // the largest float. A softmax whose logits spread wider than 104 must underflow to 0 on every
  // machine (check_numerics and the interpreter depend on it): such lanes, rare in practice, take
  // std::exp, so the result is the same for every SIMD width. NaN lanes stay NaN through pexp.
  template <class P>
  static P packet(const P& x) {
    namespace pm = simd::pm;
    using T = typename pm::unpacket_traits<P>::type;
    constexpr T lo = sizeof(T) == 4 ? T(-87) : T(-708), hi = sizeof(T) == 4 ? T(88) : T(709);
    const P y = pm::pexp(x);
    const P outside = pm::por(pm::pcmp_lt(x, pm::pset1<P>(lo)), pm::pcmp_lt(pm::pset1<P>(hi), x));
    if (!pm::predux_any(outside)) return y;
    constexpr int n = simd::packet_size<T>;
    T xs[n], ys[n];
    pm::pstoreu(xs, x);
    pm::pstoreu(ys, y);
    for (int i = 0; i < n; ++i)
      if (xs[i] < lo || xs[i] > hi) ys[i] = std::exp(xs[i]);
    return pm::ploadu<P>(ys);
  }
  // exp(log x) -> x only where x is known to be >= 0 (elsewhere exp(log x) is NaN, not x);
  // exp(0) -> 1.
  template <class X>
  static auto simplify(const X& x) {
    if constexpr (is_zero_v<X>) return one<value_type_of<X>>{};
    else if constexpr (is_unary_node_v<X, log_op>) {
      if constexpr (known_nonnegative_v<std::tuple_element_t<0, operands_of<decltype(x)>>>) return std::get<0>(x.args());
      else return no_rewrite{};
    } else return no_rewrite{};
  }
  // Derivative rule: adjoint of the operand given the upstream adjoint g and this node's value y.
  template <class G, class Y, class X>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const X& x) {
    return tuple_of(g * y);
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

// Results of exp are >= 0 (used by domain-restricted rewrites such as exp(log x) -> x).
template <class... A>
inline constexpr bool known_nonnegative_v<elementwise<ops::exp_op, A...>> = true;

template <unary_operand X>
auto exp(const X& x, source_site where = source_site::current()) {
  return make_unary<ops::exp_op>(x, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_EXP_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, exp_op)
#endif
