#pragma once
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>

#include "../expr/elementwise.hpp"
#include "packet_math.hpp"
#endif

namespace symflow {
namespace ops {
struct maximum_op : same_dtype_result {
  static constexpr std::string_view name = "maximum";
  template <class T>
  SYMFLOW_HD static auto apply(T a, T b) {
    return a >= b ? a : b;
  }
#ifndef SYMFLOW_SCALAR_ONLY
  template <class P>
  static P packet(const P& a, const P& b) {
    return simd::pm::pmax(a, b);
  }
  // Derivative rule: adjoints of (a, b) given the upstream adjoint g and this node's value y.
  template <class G, class Y, class A, class B>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const A& a,
                       [[maybe_unused]] const B& b) {
    return std::tuple{where(a >= b, g, zero<value_type_of<G>>{}), where(a >= b, zero<value_type_of<G>>{}, g)};
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <class A, class B>
  requires binary_operands<A, B>
auto maximum(const A& a, const B& b, std::source_location where = std::source_location::current()) {
  return make_binary<ops::maximum_op>(a, b, where);
}
#endif
}  // namespace symflow
