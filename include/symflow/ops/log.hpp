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
  static constexpr std::string_view onnx_op = "Log";  // its ONNX form (expr/onnx_form.hpp)
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
    // Packets without such a lane (nearly all) skip the scaling and its selects, which cost as much
    // as plog itself with AVX-512 (mask conversions); the lanes' bits are the same either way.
#if defined(__AVX512F__)
    // With AVX-512 the test is one integer compare into a mask register: a positive denormal's
    // bits, less one, are below the mantissa mask.
    if constexpr (sizeof(P) == 64) {
      if constexpr (sizeof(T) == 4) {
        const __m512i bits = _mm512_castps_si512(x);
        if (_mm512_cmplt_epu32_mask(_mm512_sub_epi32(bits, _mm512_set1_epi32(1)), _mm512_set1_epi32(0x007FFFFF)) == 0)
          return log_float_masked(x);
      } else {
        const __m512i bits = _mm512_castpd_si512(x);
        if (_mm512_cmplt_epu64_mask(_mm512_sub_epi64(bits, _mm512_set1_epi64(1)),
                                    _mm512_set1_epi64(0x000FFFFFFFFFFFFFll)) == 0)
          return pm::plog(x);
      }
    }
#endif
    const P denormal = pm::pand(pm::pcmp_lt(x, pm::pset1<P>(std::numeric_limits<T>::min())), pm::pcmp_lt(pm::pzero(x), x));
    if (!pm::predux_any(denormal)) return pm::plog(x);
    const P r = pm::plog(pm::pselect(denormal, pm::pmul(x, pm::pset1<P>(scale)), x));
    return pm::pselect(denormal, pm::psub(r, pm::pset1<P>(log_scale)), r);
  }
#if defined(__AVX512F__)
  // Eigen's float plog (plog_impl_float) step for step, the same bits, with its compares and
  // selects kept in mask registers: Eigen widens each of its five masks to a vector and back,
  // which made a fused log pass 1.4x Eigen::Tensor's time on an AVX-512 Xeon (2.5x with streaming
  // stores). frexp is getmant/getexp (exact either way); inputs are normal, zero, negative, Inf or
  // NaN (denormals take the scaled path above).
  static __m512 log_float_masked(__m512 x) {
    const __m512 one = _mm512_set1_ps(1.f);
    const __m512 clamped = _mm512_max_ps(_mm512_castsi512_ps(_mm512_set1_epi32(0x00800000)), x);
    __m512 m = _mm512_getmant_ps(clamped, _MM_MANT_NORM_p5_1, _MM_MANT_SIGN_zero);
    __m512 e = _mm512_add_ps(_mm512_getexp_ps(clamped), one);
    const __mmask16 below = _mm512_cmp_ps_mask(m, _mm512_set1_ps(0.707106781186547524f), _CMP_LT_OQ);
    const __m512 doubled = _mm512_maskz_mov_ps(below, m);
    m = _mm512_add_ps(_mm512_sub_ps(m, one), doubled);
    e = _mm512_mask_sub_ps(e, below, e, one);
    const __m512 m2 = _mm512_mul_ps(m, m), m3 = _mm512_mul_ps(m2, m);
    __m512 y = _mm512_fmadd_ps(_mm512_set1_ps(7.0376836292E-2f), m, _mm512_set1_ps(-1.1514610310E-1f));
    __m512 y1 = _mm512_fmadd_ps(_mm512_set1_ps(-1.2420140846E-1f), m, _mm512_set1_ps(+1.4249322787E-1f));
    __m512 y2 = _mm512_fmadd_ps(_mm512_set1_ps(+2.0000714765E-1f), m, _mm512_set1_ps(-2.4999993993E-1f));
    y = _mm512_fmadd_ps(y, m, _mm512_set1_ps(1.1676998740E-1f));
    y1 = _mm512_fmadd_ps(y1, m, _mm512_set1_ps(-1.6668057665E-1f));
    y2 = _mm512_fmadd_ps(y2, m, _mm512_set1_ps(+3.3333331174E-1f));
    y = _mm512_fmadd_ps(y, m3, y1);
    y = _mm512_fmadd_ps(y, m3, y2);
    y = _mm512_mul_ps(y, m3);
    y = _mm512_fmadd_ps(_mm512_set1_ps(-0.5f), m2, y);
    __m512 r = _mm512_fmadd_ps(e, _mm512_set1_ps(0.693147180559945309f), _mm512_add_ps(m, y));
    const __m512 zero = _mm512_setzero_ps(), inf = _mm512_set1_ps(std::numeric_limits<float>::infinity());
    r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(x, inf, _CMP_EQ_OQ), inf);
    r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(x, zero, _CMP_NGE_UQ), _mm512_castsi512_ps(_mm512_set1_epi32(-1)));
    return _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(x, zero, _CMP_EQ_OQ), _mm512_set1_ps(-std::numeric_limits<float>::infinity()));
  }
#endif
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
