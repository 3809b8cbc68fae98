#pragma once
#ifndef SYMFLOW_SCALAR_ONLY
#include <limits>

#include "../expr/reduction.hpp"
#include "../expr/leaves.hpp"
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
  template <class T>
  SYMFLOW_HD static T combine(T a, T b) {
    return a >= b ? a : b;
  }
#ifndef SYMFLOW_SCALAR_ONLY
  template <class P>
  static P packet_combine(const P& a, const P& b) {
    return simd::pm::pmax(a, b);
  }
  template <class P>
  static auto packet_reduce(const P& p) {
    return simd::pm::predux_max(p);
  }
  // Derivative rule, given the upstream adjoint g and this node's value y (both with the reduced axes
  // kept as extent 1), the operand x and the number of elements each result combines. Every element equal to the extremum gets the full adjoint (a subgradient at ties).
  template <class G, class Y, class X, class Count>
  static auto gradient([[maybe_unused]] const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const X& x,
                       [[maybe_unused]] const Count& count) {
    return std::tuple{where(equal(x, y), g, zero<value_type_of<G>>{})};
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

inline constexpr reduction_function<ops::max_op> max{};
#endif
}  // namespace symflow
