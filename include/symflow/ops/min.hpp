#pragma once
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>
#include <limits>

#include "../expr/reduction.hpp"
#include "../expr/leaves.hpp"
#include "minimum.hpp"
#include "packet_math.hpp"
#endif

namespace symflow {
namespace ops {
struct min_op {
  static constexpr std::string_view name = "min";
  template <class T>
  static constexpr T identity() {
    return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
  }
  // minimum_op's semantics (ops/minimum.hpp), so that the result does not depend on the order elements
  // are combined in (packets, threads, the interpreter's loop): a NaN anywhere gives NaN, and
  // -0 < +0. Restated here because a device compilation sees this file alone.
  template <class T>
  SYMFLOW_HD static T combine(T a, T b) {
    if constexpr (std::numeric_limits<T>::has_infinity) {
      if (a != a) return a;
      if (b != b) return b;
      if (a == b) return std::copysign(T(1), a) < T(0) ? a : b;  // equal: only ±0 differ
    }
    return b < a ? b : a;
  }
#ifndef SYMFLOW_SCALAR_ONLY
  template <class P>
  static P packet_combine(const P& a, const P& b) {
    return minimum_op::packet(a, b);
  }
  template <class P>
  static auto packet_reduce(const P& p) {
    // Lane by lane with combine: Eigen's predux_min leaves NaN and the sign of zero unspecified.
    return simd::fold_lanes(p, [](auto a, auto b) { return combine(a, b); });
  }
  // Derivative rule, given the upstream adjoint g and this node's value y (both with the reduced axes
  // kept as extent 1), the operand x and the number of elements each result combines. Every element equal to the extremum gets the full adjoint (a subgradient at ties).
  template <class G, class Y, class X, class Count>
  static auto gradient([[maybe_unused]] const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const X& x,
                       [[maybe_unused]] const Count& count) {
    return tuple_of(where(equal(x, y), g, zero<value_type_of<G>>{}));
  }
  // Forward mode: the tangent at the extremum (summed over ties), to be summed over the reduced axes.
  template <class TX, class Y, class X>
  static auto tangent_operand(const TX& tx, const Y& y, const X& x) {
    return where(equal(x, y), tx, zero<value_type_of<X>>{});
  }
#endif
  template <class T>
  SYMFLOW_HD static T finish(T acc, [[maybe_unused]] std::size_t count) {
    return acc;
  }
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

inline constexpr reduction_function<ops::min_op> min{};
#endif
}  // namespace symflow
