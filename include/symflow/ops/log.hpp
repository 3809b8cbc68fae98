#ifndef SYMFLOW_OPS_LOG_HPP
#define SYMFLOW_OPS_LOG_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>
#include <limits>

#include "../expr/elementwise.hpp"
#include "packet_math.hpp"
#include "../expr/rewrite.hpp"
#endif

namespace symflow {
namespace ops {
#ifndef SYMFLOW_SCALAR_ONLY
struct exp_op;
#endif
struct log_op : floating_result {
  static constexpr std::string_view name = "log";
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "log(x), the natural logarithm, elementwise; f32 or f64. log(±0) = -Inf, log of a negative "
      "number or of -Inf is NaN, log(+Inf) = +Inf, log(1) = 0, NaN stays NaN. On the host it is "
      "Eigen's vectorized log (the same bits in SIMD and scalar code), with denormal inputs scaled "
      "into the normal range first, so log(1.4e-45) in f32 is -103.28 as it should be. simplify: "
      "log(1) -> 0, and log(exp x) -> x for every x (also more accurate: exp overflows past 88 in "
      "f32). Gradient: g / x. Example: log(x) for x = [1, 0, -1] is [0, -Inf, NaN].";
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
    return std::log(x);
  }
#ifndef SYMFLOW_SCALAR_ONLY
  template <class P>
  static P packet(const P& x) {
    namespace pm = simd::pm;
    using T = typename pm::unpacket_traits<P>::type;
    // Eigen's plog takes a denormal for the smallest normal (log(1e-45f) would be -87.3, not -103.3):
    // such lanes are scaled into the normal range by 2^24 (2^54 for double) and the log of the scale
    // subtracted.
    const T scale = sizeof(T) == 4 ? T(0x1p24) : T(0x1p54);
    const T log_scale = sizeof(T) == 4 ? T(16.635532333438687) : T(37.429947750237047);
    const P denormal = pm::pand(pm::pcmp_lt(x, pm::pset1<P>(std::numeric_limits<T>::min())), pm::pcmp_lt(pm::pzero(x), x));
    // Packets without such a lane (nearly all) skip the scaling and its selects, which cost as much
    // as plog itself with AVX-512 (mask conversions); the lanes' bits are the same either way.
    if (!pm::predux_any(denormal)) return pm::plog(x);
    const P r = pm::plog(pm::pselect(denormal, pm::pmul(x, pm::pset1<P>(scale)), x));
    return pm::pselect(denormal, pm::psub(r, pm::pset1<P>(log_scale)), r);
  }
  // log(exp x) -> x for every x (and more accurate: exp overflows past 88 in float); log(1) -> 0.
  template <class X>
  static auto simplify(const X& x) {
    if constexpr (is_one_v<X>) return zero<value_type_of<X>>{};
    else if constexpr (is_unary_node_v<X, exp_op>) return std::get<0>(x.args());
    else return no_rewrite{};
  }
  // Derivative rule: adjoint of the operand given the upstream adjoint g and this node's value y.
  template <class G, class Y, class X>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const X& x) {
    return tuple_of(g / x);
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <unary_operand X>
auto log(const X& x, source_site where = source_site::current()) {
  return make_unary<ops::log_op>(x, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_LOG_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, log_op)
#endif
