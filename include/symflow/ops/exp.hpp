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
struct log_op;
#endif
struct exp_op : floating_result {
  static constexpr std::string_view name = "exp";
#ifndef SYMFLOW_SCALAR_ONLY
  // Costs more to recompute than to read back: a repeat within one fused loop reuses the value.
  static constexpr bool costly = true;
#endif
  template <class T>
  SYMFLOW_HD static T apply(T x) {
    return std::exp(x);
  }
#ifndef SYMFLOW_SCALAR_ONLY
  template <class P>
  static P packet(const P& x) {
    // Eigen 3.4's double pexp clamps its argument and never reaches 0 (exp(-2000) gave 5.6e-309).
    if constexpr (std::is_same_v<typename simd::pm::unpacket_traits<P>::type, double>)
      return simd::pm::pselect(simd::pm::pcmp_lt(x, simd::pm::pset1<P>(-745.2)), simd::pm::pzero(x),
                               simd::pm::pexp(x));
    else
      return simd::pm::pexp(x);
  }
  // exp(log x) -> x only where x is known to be >= 0 (elsewhere exp(log x) is NaN, not x);
  // exp(0) -> 1.
  template <class X>
  static auto simplify(const X& x) {
    if constexpr (is_zero_v<X>) return one<value_type_of<X>>{};
    else if constexpr (is_unary_node_v<X, log_op>) {
      if constexpr (known_nonnegative_v<std::tuple_element_t<0, decltype(x.args)>>) return std::get<0>(x.args);
      else return no_rewrite{};
    } else return no_rewrite{};
  }
  // Derivative rule: adjoint of the operand given the upstream adjoint g and this node's value y.
  template <class G, class Y, class X>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const X& x) {
    return std::tuple{g * y};
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

// Results of exp are >= 0 (used by domain-restricted rewrites such as exp(log x) -> x).
template <class... A>
inline constexpr bool known_nonnegative_v<elementwise<ops::exp_op, A...>> = true;

template <expression X>
auto exp(const X& x, std::source_location where = std::source_location::current()) {
  return make_unary<ops::exp_op>(x, where);
}
#endif
}  // namespace symflow
