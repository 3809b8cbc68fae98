#pragma once
// SIMD packet functions come from Eigen's packet math (exp, log, sin, tanh... within a few ulps, no
// -ffast-math needed). Ops call them through this alias only.
//
// The IEEE law (docs/graph.md, tests/op_ieee_law_test.cpp): an element gets the same bits whether a
// loop computes it in a SIMD packet or in its scalar tail, whatever the packet width. Exact ops
// (add, mul, comparisons...) write both forms with the same IEEE semantics; ops whose packet form is
// an approximation compute their scalar function on the host as one lane of it (first_lane).
#include <type_traits>

#include "../core/eigen.hpp"

namespace symflow::simd {
namespace pm = Eigen::internal;
template <class T>
using packet_t = typename pm::packet_traits<T>::type;
template <class T>
inline constexpr int packet_size = pm::unpacket_traits<packet_t<T>>::size;
// Whether this build has SIMD packets of T.
template <class T>
inline constexpr bool vectorized = pm::packet_traits<T>::Vectorizable && (packet_size<T> > 1);

// Lane 0 of a packet function applied to broadcast operands: the scalar function of an op whose
// packet form differs from std:: math (by an ulp, or on denormals, overflow, huge arguments), so that
// a value does not depend on where a loop's packets end.
template <class T, class F, class... A>
inline T first_lane(F f, A... a) {
  return pm::pfirst(f(pm::pset1<packet_t<T>>(a)...));
}

// Correctly rounded square root of each lane, as std::sqrt: Eigen's psqrt is, with EIGEN_FAST_MATH
// (its default) on SSE/AVX/AVX-512, a reciprocal-square-root estimate and a Newton step, off by an
// ulp at times, NaN for +Inf and 0 for denormals and -0.
template <class P>
inline P exact_sqrt(const P& x) {
  // Picked by lane type and count: naming __m128 & co. as template arguments warns (their attributes).
  using T = typename pm::unpacket_traits<P>::type;
  constexpr int n = pm::unpacket_traits<P>::size;
  constexpr bool f = std::is_same_v<T, float>, d = std::is_same_v<T, double>;
#if defined(__AVX512F__)
  if constexpr (f && n == 16) return _mm512_sqrt_ps(x);
  if constexpr (d && n == 8) return _mm512_sqrt_pd(x);
#endif
#if defined(__AVX__)
  if constexpr (f && n == 8) return _mm256_sqrt_ps(x);
  if constexpr (d && n == 4) return _mm256_sqrt_pd(x);
#endif
#if defined(__SSE2__)
  if constexpr (f && n == 4) return _mm_sqrt_ps(x);
  if constexpr (d && n == 2) return _mm_sqrt_pd(x);
#endif
  return pm::psqrt(x);  // other ISAs: Eigen's sqrt instruction (no estimate there)
}

// The lanes of p combined in order, lane 0 first: f(f(f(p0, p1), p2), ...). For reductions whose
// rule Eigen's predux_* does not keep (NaN, signed zeros).
template <class P, class F>
inline auto fold_lanes(const P& p, F f) {
  using T = typename pm::unpacket_traits<P>::type;
  constexpr int n = pm::unpacket_traits<P>::size;
  alignas(64) T lanes[n];
  pm::pstoreu(lanes, p);
  T r = lanes[0];
  for (int i = 1; i < n; ++i) r = f(r, lanes[i]);
  return r;
}

// All-ones in the lanes holding a NaN.
template <class P>
inline P nan_lanes(const P& x) {
  return pm::pandnot(pm::ptrue(x), pm::pcmp_eq(x, x));
}
}  // namespace symflow::simd
