#ifndef SYMFLOW_OPS_PRELU_HPP
#define SYMFLOW_OPS_PRELU_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include "../expr/elementwise.hpp"
#include "less.hpp"
#include "mul.hpp"
#include "packet_math.hpp"
#include "where.hpp"
#endif

namespace symflow {
namespace ops {
// The slope is an operand, not an attribute: a number in C++ becomes a literal that the fused loop
// (and generated device code) reads as a constant, and a tensor slope broadcasts and is learnable.
struct prelu_op : floating_result {
  static constexpr std::string_view name = "prelu";
  static constexpr std::string_view onnx_op = "PRelu";  // its ONNX form (expr/onnx_form.hpp)
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "prelu(x, slope) = slope * x where x < 0, else x, elementwise (ONNX PRelu; leaky_relu(x, alpha = "
      "0.01) is this op with a number as slope, ONNX LeakyRelu). x and slope have one dtype, f32 or f64, "
      "and broadcast (a slope of shape [C] against x of shape [N, C] is one slope per channel); in C++ "
      "the slope may be a plain number. As ONNX defines it: ±0 stays as it is (the test is x < 0), NaN "
      "stays NaN, -Inf gives slope * -Inf. Gradient: g * slope where x < 0, else g (g at x = 0); "
      "for the slope g * x where x < 0, else 0, summed over broadcast axes. Example: prelu([-2, -0, 3], "
      "0.1) is [-0.2, -0, 3].";
#endif
  // One IEEE product, selected: the packet form below gives the same bits lane by lane.
  template <class T>
  SYMFLOW_HD static T apply(T x, T slope) {
    return x < T(0) ? slope * x : x;
  }
#ifndef SYMFLOW_SCALAR_ONLY
  template <class P>
  static P packet(const P& x, const P& slope) {
    namespace pm = simd::pm;
    return pm::pselect(pm::pcmp_lt(x, pm::pzero(x)), pm::pmul(slope, x), x);
  }
  // Derivative rule: adjoints of (x, slope) given the upstream adjoint g and this node's value y.
  template <class G, class Y, class X, class S>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, const X& x, const S& slope) {
    using T = value_type_of<G>;
    return tuple_of(where(x < 0, g * slope, g), where(x < 0, g * x, zero<T>{}));
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

// prelu(x, slope): slope * x where x < 0, else x; the slope broadcasts against x.
template <class X, class S>
  requires binary_operands<X, S>
auto prelu(const X& x, const S& slope, source_site where = source_site::current()) {
  return make_binary<ops::prelu_op>(x, slope, where);
}

// leaky_relu(x, alpha): prelu with a number as its slope (a node named prelu in the graph).
template <unary_operand X>
auto leaky_relu(const X& x, double alpha = 0.01, source_site where = source_site::current()) {
  return make_binary<ops::prelu_op>(x, alpha, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_PRELU_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, prelu_op)
#endif
