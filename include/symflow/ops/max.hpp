#pragma once
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>
#include <limits>

#include "../expr/reduction.hpp"
#include "../expr/leaves.hpp"
#include "maximum.hpp"
#include "sum.hpp"
#include "packet_math.hpp"
#endif

namespace symflow {
namespace ops {
struct max_op {
  static constexpr std::string_view name = "max";
  template <class T>
  static constexpr T identity() {
    return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
  }
  // maximum_op's semantics (ops/maximum.hpp), so that the result does not depend on the order elements
  // are combined in (packets, threads, the interpreter's loop): a NaN anywhere gives NaN, and
  // -0 < +0. Restated here because a device compilation sees this file alone.
  template <class T>
  SYMFLOW_HD static T combine(T a, T b) {
    if constexpr (std::numeric_limits<T>::has_infinity) {
      if (a != a) return a;
      if (b != b) return b;
      if (a == b) return std::copysign(T(1), a) < T(0) ? b : a;  // equal: only ±0 differ
    }
    return a < b ? b : a;
  }
#ifndef SYMFLOW_SCALAR_ONLY
  template <class P>
  static P packet_combine(const P& a, const P& b) {
    return maximum_op::packet(a, b);
  }
  template <class P>
  static auto packet_reduce(const P& p) {
    // Lane by lane with combine: Eigen's predux_max leaves NaN and the sign of zero unspecified.
    return simd::fold_lanes(p, [](auto a, auto b) { return combine(a, b); });
  }
  // Derivative rule, given the upstream adjoint g and this node's value y (both with the reduced axes
  // kept as extent 1), the operand x, the number of elements each result combines, and `over`, which
  // reduces an operand-shaped value over this node's axes. The elements equal to the extremum share the
  // adjoint evenly: with k ties each gets g / k, the others 0 (-0 and +0 tie). As in JAX and PyTorch's
  // amax/amin, a NaN extremum equals no element and its whole slice gets NaN (0 · g / 0).
  template <class G, class Y, class X, class Count, class Over>
  static auto gradient([[maybe_unused]] const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const X& x,
                       [[maybe_unused]] const Count& count, const Over& over) {
    using T = value_type_of<G>;
    const auto indicator = where(equal(x, y), one<T>{}, zero<T>{});
    return tuple_of(g / over(sum_op{}, indicator) * indicator);
  }
  // Forward mode: the mean of the tangent over the ties (each tie's share, summed by the caller over the
  // reduced axes); NaN where the extremum is NaN, as the reverse rule.
  template <class TX, class Y, class X, class Over>
  static auto tangent_operand(const TX& tx, const Y& y, const X& x, const Over& over) {
    using T = value_type_of<X>;
    const auto at_extremum = equal(x, y);
    return where(at_extremum, tx, zero<T>{}) / over(sum_op{}, where(at_extremum, one<T>{}, zero<T>{}));
  }
#endif
  template <class T>
  SYMFLOW_HD static T finish(T acc, [[maybe_unused]] std::size_t count) {
    return acc;
  }
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

inline constexpr reduction_function<ops::max_op> max{};
#endif
}  // namespace symflow
