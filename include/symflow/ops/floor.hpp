#ifndef SYMFLOW_OPS_FLOOR_HPP
#define SYMFLOW_OPS_FLOOR_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>
#include <type_traits>

#include "../expr/elementwise.hpp"
#include "packet_math.hpp"
#endif

namespace symflow {
namespace ops {
namespace rounding_detail {
// The rounding-control immediates of SSE4.1 / AVX / AVX-512 rounding (_MM_FROUND_*: <smmintrin.h>
// defines them only where SSE4.1 is enabled): toward -Inf, toward +Inf, the current mode (MXCSR;
// round to nearest, ties to even, by default, as std::nearbyint follows it), and "raise no inexact
// exception". Outside the host-only part: they name the ops' rounding modes (rounding_op below).
inline constexpr int toward_negative = 0x01, toward_positive = 0x02, current_mode = 0x04;
inline constexpr int no_exceptions = 0x08;
}  // namespace rounding_detail
#ifndef SYMFLOW_SCALAR_ONLY
namespace rounding_detail {
// Whether this build rounds packets of T to integers with one instruction (SSE4.1 roundps/pd,
// AVX vroundps/pd, AVX-512 vrndscaleps/pd): exact, as std::floor, std::ceil and std::nearbyint are,
// NaN (quieted) and -0 kept. Eigen 3.4's pfloor/pceil are not used: without SSE4.1 they go through
// a 2^23 trick that turns floor(-0) into +0, and with AVX-512 float packets they have no
// specialisation. Builds without SSE4.1 give floor, ceil and round no packet form.
template <class T>
inline constexpr bool exact_packets =
#if defined(__SSE4_1__)
    (std::is_same_v<T, float> || std::is_same_v<T, double>) && simd::vectorized<T>;
#else
    false;
#endif


// Each lane of x rounded to an integer in the mode Mode (one of the above), picked by lane type and
// count as simd::exact_sqrt does.
template <int Mode, class P>
inline P round_lanes(const P& x) {
  using T = typename simd::pm::unpacket_traits<P>::type;
  constexpr int n = simd::pm::unpacket_traits<P>::size;
  constexpr bool f = std::is_same_v<T, float>, d = std::is_same_v<T, double>;
#if defined(__AVX512F__)
  if constexpr (f && n == 16) return _mm512_roundscale_ps(x, Mode | no_exceptions);
  if constexpr (d && n == 8) return _mm512_roundscale_pd(x, Mode | no_exceptions);
#endif
#if defined(__AVX__)
  if constexpr (f && n == 8) return _mm256_round_ps(x, Mode | no_exceptions);
  if constexpr (d && n == 4) return _mm256_round_pd(x, Mode | no_exceptions);
#endif
#if defined(__SSE4_1__)
  if constexpr (f && n == 4) return _mm_round_ps(x, Mode | no_exceptions);
  if constexpr (d && n == 2) return _mm_round_pd(x, Mode | no_exceptions);
#endif
  static_assert(f || d, "symflow: round_lanes takes float or double packets");
  return x;  // unreachable where exact_packets<T> holds
}
}  // namespace rounding_detail
#endif

// What floor, ceil and round share besides their scalar function: the exact one-instruction SIMD
// form in their rounding mode, and a derivative that is 0 wherever it exists.
template <int Mode>
struct rounding_op : floating_result {
#ifndef SYMFLOW_SCALAR_ONLY
  template <class T>
  static constexpr bool packet_dtype_ok = rounding_detail::exact_packets<T>;
  template <class P>
  static P packet(const P& x) {
    return rounding_detail::round_lanes<Mode>(x);
  }
  // Derivative rule: adjoint of the operand given the upstream adjoint g and this node's value y.
  template <class G, class Y, class X>
  static auto gradient(const G&, const Y&, const X&) {
    return tuple_of(zero<value_type_of<G>>{});
  }
#endif
};

struct floor_op : rounding_op<rounding_detail::toward_negative> {
  static constexpr std::string_view name = "floor";
  static constexpr std::string_view onnx_op = "Floor";  // its ONNX form (expr/onnx_form.hpp)
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "floor(x), elementwise: the largest integer not greater than x, as a value of x's dtype; f32 or "
      "f64. Exact (std::floor; SIMD code rounds with one instruction, the same bits): floor(±Inf) = "
      "±Inf, floor(-0) = -0, NaN stays NaN, and values too large to have a fraction (|x| >= 2^23 in "
      "f32, 2^52 in f64) are unchanged, so floor(1e30) = 1e30. Gradient: 0 (the derivative is 0 "
      "wherever it exists). Example: floor(x) for x = [-1.5, -0.5, 0.5, 2] is [-2, -1, 0, 2].";
#endif
  template <class T>
  SYMFLOW_HD static T apply(T x) {
    return std::floor(x);
  }
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <unary_operand X>
auto floor(const X& x, source_site where = source_site::current()) {
  return make_unary<ops::floor_op>(x, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_FLOOR_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, floor_op)
#endif
