#pragma once
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>

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
  // Costs more to recompute than to read back: a repeat within one fused loop reuses the value.
  static constexpr bool costly = true;
#endif
  template <class T>
  SYMFLOW_HD static T apply(T x) {
    return std::log(x);
  }
#ifndef SYMFLOW_SCALAR_ONLY
  template <class P>
  static P packet(const P& x) {
    return simd::pm::plog(x);
  }
  // log(exp x) -> x for every x (and more accurate: exp overflows past 88 in float); log(1) -> 0.
  template <class X>
  static auto simplify(const X& x) {
    if constexpr (is_one_v<X>) return zero<value_type_of<X>>{};
    else if constexpr (is_unary_node_v<X, exp_op>) return std::get<0>(x.args);
    else return no_rewrite{};
  }
  // Derivative rule: adjoint of the operand given the upstream adjoint g and this node's value y.
  template <class G, class Y, class X>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const X& x) {
    return std::tuple{g / x};
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <expression X>
auto log(const X& x, std::source_location where = std::source_location::current()) {
  return make_unary<ops::log_op>(x, where);
}
#endif
}  // namespace symflow
