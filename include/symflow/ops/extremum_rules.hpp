#pragma once
// The derivative rules and the quick row combine that max and min reductions share (ops/max.hpp,
// ops/min.hpp).
#include "../expr/leaves.hpp"
#include "../expr/reduction.hpp"
#include "equal.hpp"
#include "sum.hpp"
#include "where.hpp"
#include "packet_math.hpp"

namespace symflow::ops {

// Reverse: given the adjoint g and the extremum y (reduced axes kept as extent 1), the operand x and
// `over`, a reducer over the node's axes. The elements equal to the extremum share the adjoint
// evenly: with k ties each gets g / k, the others 0 (-0 and +0 tie). As in JAX and PyTorch's
// amax/amin, a NaN extremum equals no element and its whole slice gets NaN (0 · g / 0).
template <class G, class Y, class X, class Over>
auto extremum_gradient(const G& g, const Y& y, const X& x, const Over& over) {
  using T = value_type_of<G>;
  const auto indicator = where(equal(x, y), one<T>{}, zero<T>{});
  return tuple_of(g / over(sum_op{}, indicator) * indicator);
}

// Forward: the mean of the tangent over the ties (each tie's share, summed by the caller over the
// reduced axes); NaN where the extremum is NaN, as the reverse rule.
template <class TX, class Y, class X, class Over>
auto extremum_tangent(const TX& tx, const Y& y, const X& x, const Over& over) {
  using T = value_type_of<X>;
  const auto at_extremum = equal(x, y);
  return where(at_extremum, tx, zero<T>{}) / over(sum_op{}, where(at_extremum, one<T>{}, zero<T>{}));
}

// A quicker combine for the bulk of a row (the CPU evaluator's row reductions,
// eval/cpu/fused_loop.hpp): the plain vector maximum (or minimum), whose NaN and signed-zero
// results are unspecified. exact_lanes marks the lanes where it surely agrees with the op's
// packet_combine (no NaN); a part with another lane, or whose result is zero (+0 or -0), is combined
// again with packet_combine, so results stay the same bits. Ops name it as `using unchecked`.
template <bool Largest>
struct unchecked_extremum {
  template <class P>
  static P combine(const P& a, const P& b) {
    if constexpr (Largest) return simd::pm::pmax(a, b);
    else return simd::pm::pmin(a, b);
  }
  // The same on scalars (a select, not a branch); NaN and the sign of a zero result unspecified.
  template <class T>
  static T combine_scalar(T a, T b) {
    if constexpr (Largest) return a < b ? b : a;
    else return b < a ? b : a;
  }
  template <class P>
  static auto reduce(const P& p) {
    if constexpr (Largest) return simd::pm::predux_max(p);
    else return simd::pm::predux_min(p);
  }
  // Lanes where none of the four packets is NaN, from one compare: their sum is NaN where one of
  // them is, and elsewhere only where +Inf and -Inf (or overflowing sums) meet in a lane, which just
  // sends the part to the exact combine.
  template <class P>
  static P exact_lanes(const P& a, const P& b, const P& c, const P& d) {
    namespace pm = simd::pm;
    const P sum = pm::padd(pm::padd(a, b), pm::padd(c, d));
    return pm::pcmp_eq(sum, sum);
  }
  template <class T>
  static bool result_exact(T part) {
    return part != T(0);
  }
};

}  // namespace symflow::ops
