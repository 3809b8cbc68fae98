#ifndef SYMFLOW_OPS_EXP_HPP
#define SYMFLOW_OPS_EXP_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

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
  static constexpr std::string_view onnx_op = "Exp";  // its ONNX form (expr/onnx_form.hpp)
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "exp(x) = e^x, elementwise; f32 or f64. exp(-Inf) = 0, exp(+Inf) = +Inf, exp(±0) = 1, NaN stays "
      "NaN. On the host it is Eigen's vectorized exp where the result is a normal number (x in [-87, "
      "87] for f32, [-708, 709] for f64; not necessarily std::exp's bits) and std::exp outside that "
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
  // float: Eigen's range reduction and polynomial (pexp's, so values agree with it bit for bit where
  // exp(x) is a normal number), with the power of two applied in two exact steps of its own instead
  // of pexp's clamped ldexp: the same bits for every SIMD width, -Inf and arguments below -104 give
  // 0 and above 104 +Inf with no slow path (softmax's masked -Inf logits are common). Lanes whose
  // result is a denormal or near overflow (|x| in (87, 104)) take std::exp: there the polynomial's
  // last ulp would decide where exp underflows to 0.
  // double (and float without SIMD integers): pexp where exp(x) is a normal number. Outside that
  // range it depends on the packet width (SSE/AVX2 clamp the argument; double pexp never reaches
  // 0), so such lanes, rare in practice, take std::exp. NaN lanes stay NaN.
  template <class P>
  static P packet(const P& x) {
    namespace pm = simd::pm;
    using T = typename pm::unpacket_traits<P>::type;
    if constexpr (std::is_same_v<T, float> && requires { typename pm::unpacket_traits<P>::integer_packet; }) {
      const P y = exp_float(x);
      // |x| in (87, 104): the results that are denormal or near overflow (x in (-104, -87) or (88,
      // 89)), and some that take the same std::exp although the polynomial would do (x in (87, 88]
      // or [89, 104), where the clamp already gives +Inf). One band around 95.5 is two fewer
      // compares than two bands; softmax's arguments (x - max <= 0) never reach the positive half.
#if defined(__AVX512F__)
      // With AVX-512 the test stays in a mask register (Eigen's compares widen each mask to a vector).
      if constexpr (sizeof(P) == 64) {
        const __m512 distance = _mm512_abs_ps(_mm512_sub_ps(_mm512_abs_ps(x), _mm512_set1_ps(95.5f)));
        if (_mm512_cmp_ps_mask(distance, _mm512_set1_ps(8.5f), _CMP_LT_OQ) == 0) return y;
      }
#endif
      const P band = pm::pcmp_lt(pm::pabs(pm::psub(pm::pabs(x), pm::pset1<P>(95.5f))), pm::pset1<P>(8.5f));
      return pm::predux_any(band) ? with_std_exp(x, y, band) : y;
    } else {
      constexpr T lo = sizeof(T) == 4 ? T(-87) : T(-708), hi = sizeof(T) == 4 ? T(88) : T(709);
      const P y = pm::pexp(x);
      const P outside = pm::por(pm::pcmp_lt(x, pm::pset1<P>(lo)), pm::pcmp_lt(pm::pset1<P>(hi), x));
      return pm::predux_any(outside) ? with_std_exp(x, y, outside) : y;
    }
  }
  // y with std::exp(x) in the lanes set in `lanes`.
  template <class P>
  [[gnu::noinline]] static P with_std_exp(const P& x, const P& y, const P& lanes) {
    namespace pm = simd::pm;
    using T = typename pm::unpacket_traits<P>::type;
    using bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    constexpr int n = simd::packet_size<T>;
    T xs[n], ys[n], ls[n];
    pm::pstoreu(xs, x);
    pm::pstoreu(ys, y);
    pm::pstoreu(ls, lanes);
    for (int i = 0; i < n; ++i)
      if (std::bit_cast<bits>(ls[i]) != 0) ys[i] = std::exp(xs[i]);
    return pm::ploadu<P>(ys);
  }
  template <class P>
  static P exp_float(const P& x) {
    namespace pm = simd::pm;
    using PI = typename pm::unpacket_traits<P>::integer_packet;
    // Past these exp(x) is 0 (below half the smallest denormal) or +Inf in float.
    const P xc = pm::pmin(pm::pmax(x, pm::pset1<P>(-104.f)), pm::pset1<P>(89.f));
    const P n = pm::pfloor(pm::pmadd(xc, pm::pset1<P>(1.44269504088896341f), pm::pset1<P>(0.5f)));
    P r = pm::pmadd(n, pm::pset1<P>(-0.693359375f), xc);
    r = pm::pmadd(n, pm::pset1<P>(2.12194440e-4f), r);
    const P r2 = pm::pmul(r, r), r3 = pm::pmul(r2, r);
    P y = pm::pmadd(pm::pset1<P>(1.9875691500E-4f), r, pm::pset1<P>(1.3981999507E-3f));
    P y1 = pm::pmadd(pm::pset1<P>(4.1665795894E-2f), r, pm::pset1<P>(1.6666665459E-1f));
    const P y2 = pm::padd(r, pm::pset1<P>(1.f));
    y = pm::pmadd(y, r, pm::pset1<P>(8.3334519073E-3f));
    y1 = pm::pmadd(y1, r, pm::pset1<P>(5.0000001201E-1f));
    y = pm::pmadd(y, r3, y1);
    y = pm::pmadd(y, r2, y2);
    // y * 2^n, n in [-150, 128], as y * 2^a * 2^b with a = floor(n / 2), b = n - a, both in
    // [-75, 64]: y * 2^a is exact (y is in [0.7, 1.42]), so the one rounding is the last product's.
    // (AVX-512's scalef computes the same correctly rounded product in one instruction.)
#if defined(__AVX512F__)
    if constexpr (simd::packet_size<float> == 16 && sizeof(P) == 64) {
      // NaN lanes are x itself (the clamp lost them); the select stays in a mask register.
      return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_ORD_Q), x, _mm512_scalef_ps(y, n));
    } else
#endif
    {
      const PI ni = pm::pcast<P, PI>(n);
      const PI a = pm::parithmetic_shift_right<1>(ni), b = pm::psub(ni, a);
      const PI bias = pm::pset1<PI>(127);
      const P two_a = pm::preinterpret<P>(pm::plogical_shift_left<23>(pm::padd(a, bias)));
      const P two_b = pm::preinterpret<P>(pm::plogical_shift_left<23>(pm::padd(b, bias)));
      return pm::pselect(pm::pcmp_eq(x, x), pm::pmul(pm::pmul(y, two_a), two_b), x);
    }
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
