#pragma once
#ifndef SYMFLOW_SCALAR_ONLY
#include <tuple>

#include "../expr/elementwise.hpp"
#endif

namespace symflow {
namespace ops {
// A value computed once and read by all its users: evaluators materialise the operand (once per
// evaluation, found again by node identity) instead of fusing it into each consumer's loop. The
// reverse sweep wraps every value a derivative rule reads in it, so that a gradient's terms stay
// small loops over stored values however deep the model is.
struct hold_op : same_dtype_result {
  static constexpr std::string_view name = "hold";
  static constexpr bool materialises = true;
  template <class T>
  SYMFLOW_HD static T apply(T x) {
    return x;
  }
#ifndef SYMFLOW_SCALAR_ONLY
  template <class P>
  static P packet(const P& x) {
    return x;
  }
  template <class G, class Y, class X>
  static auto gradient(const G& g, const Y&, const X&) {
    return tuple_of(g);
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <class E>
inline constexpr bool is_held_v = is_unary_node_v<E, ops::hold_op>;

// hold(x): x computed once; leaves (already in memory or scalars) and held values are returned as
// they are.
template <expression X>
auto hold(const X& x) {
  if constexpr (!has_operands<X> || is_held_v<X>) return x;
  else return elementwise<ops::hold_op, X>{{}, operands_of_values(x), {}, {}};
}
#endif
}  // namespace symflow
