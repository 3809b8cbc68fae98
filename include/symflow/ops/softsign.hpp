#ifndef SYMFLOW_OPS_SOFTSIGN_HPP
#define SYMFLOW_OPS_SOFTSIGN_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>

#include "../expr/elementwise.hpp"
#include "abs.hpp"
#include "packet_math.hpp"
#include "square.hpp"
#endif

namespace symflow {
namespace ops {
struct softsign_op : floating_result {
  static constexpr std::string_view name = "softsign";
  static constexpr std::string_view onnx_op = "Softsign";  // its ONNX form (expr/onnx_form.hpp)
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "softsign(x) = x / (1 + |x|), elementwise: a smooth sign with values in (-1, 1) that approaches "
      "its limits polynomially, not exponentially as tanh does. As in PyTorch and ONNX it is computed "
      "by that formula, so softsign(±Inf) is NaN; softsign(-0) = -0. Gradient: g / (1 + |x|)^2. "
      "Example: softsign(x) for x = [-3, 0, 1] is [-0.75, 0, 0.5].";
#endif
  // One IEEE division and one addition: the packet form below gives the same bits lane by lane.
  template <class T>
  SYMFLOW_HD static T apply(T x) {
    return x / (T(1) + (x < T(0) ? -x : x));
  }
#ifndef SYMFLOW_SCALAR_ONLY
  template <class P>
  static P packet(const P& x) {
    return simd::pm::pdiv(x, simd::pm::padd(simd::pm::pset1<P>(1), simd::pm::pabs(x)));
  }
  // Derivative rule: adjoint of the operand given the upstream adjoint g and this node's value y.
  template <class G, class Y, class X>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const X& x) {
    return tuple_of(g / square(1 + abs(x)));
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <unary_operand X>
auto softsign(const X& x, source_site where = source_site::current()) {
  return make_unary<ops::softsign_op>(x, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_SOFTSIGN_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, softsign_op)
#endif
