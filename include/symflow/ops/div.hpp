#pragma once
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>

#include "../expr/elementwise.hpp"
#include "packet_math.hpp"
#include "../expr/rewrite.hpp"
#endif

namespace symflow {
namespace ops {
struct div_op : same_dtype_result {
  static constexpr std::string_view name = "div";
  template <class T>
  SYMFLOW_HD static auto apply(T a, T b) {
    return a / b;
  }
#ifndef SYMFLOW_SCALAR_ONLY
  template <class P>
  static P packet(const P& a, const P& b) {
    return simd::pm::pdiv(a, b);
  }
  // x / 1 -> x, 0 / x -> 0 (taking x != 0, as the forward value does).
  template <class A, class B>
  static auto simplify(const A& a, const B&) {
    using T = value_type_of<A>;
    if constexpr (is_one_v<B>) return a;
    else if constexpr (is_zero_v<A>) return zero<T>{};
    else return no_rewrite{};
  }
  // Derivative rule: adjoints of (a, b) given the upstream adjoint g and this node's value y.
  template <class G, class Y, class A, class B>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const A& a,
                       [[maybe_unused]] const B& b) {
    return std::tuple{g / b, -(g * y / b)};
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <class A, class B>
  requires binary_operands<A, B>
auto operator/(const A& a, const B& b) {
  return make_binary<ops::div_op>(a, b);
}
#endif
}  // namespace symflow
