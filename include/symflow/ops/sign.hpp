#ifndef SYMFLOW_OPS_SIGN_HPP
#define SYMFLOW_OPS_SIGN_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>
#include <limits>

#include "../expr/elementwise.hpp"
#include "packet_math.hpp"
#endif

namespace symflow {
namespace ops {
// sign(x) is 1 or -1 away from zero; zeros and NaN are returned as they are: sign(NaN) = NaN,
// sign(-0) = -0, sign(+0) = +0 (IEEE-style, as JAX/XLA; NumPy gives +0 for -0).
struct sign_op : same_dtype_result {
  static constexpr std::string_view name = "sign";
  static constexpr std::string_view onnx_op = "Sign";  // its ONNX form (expr/onnx_form.hpp)
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "sign(x), elementwise: 1 where x > 0, -1 where x < 0, and x itself otherwise, so sign(-0) = -0, "
      "sign(+0) = +0 and sign(NaN) = NaN. Any dtype (integers give -1, 0 or 1; bool is unchanged). "
      "Gradient: 0 (the derivative is 0 wherever it exists). Example: sign(x) for x = [-3, -0, 2.5] is "
      "[-1, -0, 1].";
#endif
  template <class T>
  SYMFLOW_HD static T apply(T x) {
    return x > T(0) ? T(1) : x < T(0) ? T(-1) : x;
  }
#ifndef SYMFLOW_SCALAR_ONLY

  // Derivative rule: adjoint of the operand given the upstream adjoint g and this node's value y.
  template <class G, class Y, class X>
  static auto gradient(const G&, [[maybe_unused]] const Y& y, [[maybe_unused]] const X& x) {
    return tuple_of(zero<value_type_of<G>>{});
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <unary_operand X>
auto sign(const X& x, source_site where = source_site::current()) {
  return make_unary<ops::sign_op>(x, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_SIGN_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, sign_op)
#endif
