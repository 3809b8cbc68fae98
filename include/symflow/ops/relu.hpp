#ifndef SYMFLOW_OPS_RELU_HPP
#define SYMFLOW_OPS_RELU_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>
#include <limits>

#include "../expr/elementwise.hpp"
#include "../expr/known_function.hpp"
#include "packet_math.hpp"
#include "../expr/rewrite.hpp"
#endif

namespace symflow {
namespace ops {
// relu(x) = maximum(x, +0): NaN stays NaN (the operand itself, as in PyTorch), relu(-0) = +0.
// The packet form selects the same way, so a NaN's bits do not depend on its position.
struct relu_op : same_dtype_result {
  static constexpr std::string_view name = "relu";
  static constexpr std::string_view onnx_op = "Relu";  // its ONNX form (expr/onnx_form.hpp)
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "relu(x) = max(x, 0), elementwise: x where x > 0, else +0; any dtype. relu(-0) = +0, relu(+Inf) "
      "= +Inf, relu(-Inf) = 0, and a NaN stays NaN (the operand itself, the same bits in SIMD and "
      "scalar code). Gradient: g where x > 0, else 0 (0 at x = 0 and at NaN). Example: relu(x) for x = "
      "[-1, 0, 2] is [0, 0, 2].";
#endif
  template <class T>
  SYMFLOW_HD static T apply(T x) {
    return x <= T(0) ? T(0) : x;  // false for NaN
  }
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr known_function computes = known_function::relu;
  template <class P>
  static P packet(const P& x) {
    return simd::pm::pselect(simd::pm::pcmp_le(x, simd::pm::pzero(x)), simd::pm::pzero(x), x);
  }
  // Derivative rule: adjoint of the operand given the upstream adjoint g and this node's value y.
  template <class G, class Y, class X>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const X& x) {
    return tuple_of(where(x > 0, g, zero<value_type_of<G>>{}));
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

// Results of relu are >= 0 (used by domain-restricted rewrites such as exp(log x) -> x).
template <class... A>
inline constexpr bool known_nonnegative_v<elementwise<ops::relu_op, A...>> = true;

template <unary_operand X>
auto relu(const X& x, source_site where = source_site::current()) {
  return make_unary<ops::relu_op>(x, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_RELU_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, relu_op)
#endif
