#ifndef SYMFLOW_OPS_NOT_EQUAL_HPP
#define SYMFLOW_OPS_NOT_EQUAL_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>

#include "../expr/elementwise.hpp"
#include "packet_math.hpp"
#endif

namespace symflow {
namespace ops {
// IEEE comparison: true where either operand is NaN, false for -0 vs +0. Scalar only (no packet form).
struct not_equal_op : mask_result {
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr bool is_comparison = true;
#endif
  static constexpr std::string_view name = "not_equal";
  template <class T>
  SYMFLOW_HD static auto apply(T a, T b) {
    return a != b;
  }
#ifndef SYMFLOW_SCALAR_ONLY

  // Derivative rule: adjoints of (a, b) given the upstream adjoint g and this node's value y.
  template <class G, class Y, class A, class B>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const A& a,
                       [[maybe_unused]] const B& b) {
    return tuple_of(no_gradient{}, no_gradient{});
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <class A, class B>
  requires binary_operands<A, B>
auto not_equal(const A& a, const B& b, source_site where = source_site::current()) {
  return make_binary<ops::not_equal_op>(a, b, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_NOT_EQUAL_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, not_equal_op)
#endif
