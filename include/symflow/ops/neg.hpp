#ifndef SYMFLOW_OPS_NEG_HPP
#define SYMFLOW_OPS_NEG_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>
#include <limits>

#include "../expr/elementwise.hpp"
#include "packet_math.hpp"
#include "../expr/rewrite.hpp"
#endif

namespace symflow {
namespace ops {
// Flips the sign bit of a float (neg(0) = -0, NaN stays NaN), as the packet form does. Integers
// wrap: neg(INT_MIN) = INT_MIN (two's complement; -INT_MIN is undefined behaviour in C++, so the
// negation is done in unsigned arithmetic).
struct neg_op : same_dtype_result {
  static constexpr std::string_view name = "neg";
  static constexpr std::string_view onnx_op = "Neg";  // its ONNX form (expr/onnx_form.hpp)
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "neg(x) = -x (unary operator-), elementwise; any dtype. Floats get their sign bit flipped: "
      "neg(+0) = -0, neg(±Inf) = ∓Inf, and a NaN stays NaN with its sign flipped. Integers wrap: "
      "neg(INT_MIN) = INT_MIN. bool is unchanged. simplify: -(-x) -> x, and the negation of a literal "
      "0 is 0 (not -0). Gradient: -g. Example: neg(x) for x = [1, -2, 0] is [-1, 2, -0].";
#endif
  template <class T>
  SYMFLOW_HD static T apply(T x) {
    if constexpr (std::numeric_limits<T>::has_infinity) return -x;
    else return T(0ull - static_cast<unsigned long long>(x));
  }
#ifndef SYMFLOW_SCALAR_ONLY
  template <class P>
  static P packet(const P& x) {
    return simd::pm::pxor(x, simd::pm::pset1<P>(-0.0));  // the sign bit (Eigen's AVX-512 pnegate is 0 - x: +0 for +0)
  }
  // -(-x) -> x, -0 -> 0, literal folding.
  template <class X>
  static auto simplify(const X& x) {
    if constexpr (is_zero_v<X>) return x;
    else if constexpr (is_static_literal_v<X>) return static_literal<value_type_of<X>, -(long long)X::value>{};
    else if constexpr (is_unary_node_v<X, neg_op>) return std::get<0>(x.args());
    else return no_rewrite{};
  }
  // Derivative rule: adjoint of the operand given the upstream adjoint g and this node's value y.
  template <class G, class Y, class X>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const X& x) {
    return tuple_of(-g);
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <unary_operand X>
auto neg(const X& x, source_site where = source_site::current()) {
  return make_unary<ops::neg_op>(x, where);
}
#endif
}  // namespace symflow

namespace symflow {
#ifndef SYMFLOW_SCALAR_ONLY
template <unary_operand X>
auto operator-(const X& x) {
  return make_unary<ops::neg_op>(x, source_site{});
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_NEG_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, neg_op)
#endif
