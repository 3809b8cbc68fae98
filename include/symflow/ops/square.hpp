#ifndef SYMFLOW_OPS_SQUARE_HPP
#define SYMFLOW_OPS_SQUARE_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>
#include <limits>

#include "../expr/elementwise.hpp"
#include "packet_math.hpp"
#include "../expr/rewrite.hpp"
#include "../expr/onnx_form.hpp"
#endif

namespace symflow {
namespace ops {
// x * x, as mul. Integers wrap (two's complement, what the hardware and NumPy do): signed overflow is undefined
// behaviour in C++, so integer operands are computed in unsigned arithmetic.
struct square_op : same_dtype_result {
  static constexpr std::string_view name = "square";
#ifndef SYMFLOW_SCALAR_ONLY
  // ONNX: x * x.
  static void write_onnx(onnx_node_writer& w) { w.add("Mul", {w.operand(0), w.operand(0)}, {}, true); }
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "square(x) = x * x, elementwise, one multiplication as mul; any dtype. square(-0) = +0, "
      "square(±Inf) = +Inf, NaN stays NaN; integers wrap (46341^2 in i32 is -2147479015); bool is "
      "unchanged. Gradient: g * 2 * x. Example: square(x) for x = [-3, 0.5, 2] is [9, 0.25, 4].";
#endif
  template <class T>
  SYMFLOW_HD static T apply(T x) {
    if constexpr (std::numeric_limits<T>::has_infinity) return x * x;
    else return T(static_cast<unsigned long long>(x) * static_cast<unsigned long long>(x));
  }
#ifndef SYMFLOW_SCALAR_ONLY
  template <class P>
  static P packet(const P& x) {
    return simd::pm::pmul(x, x);
  }
  // Derivative rule: adjoint of the operand given the upstream adjoint g and this node's value y.
  template <class G, class Y, class X>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const X& x) {
    return tuple_of(g * 2 * x);
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

// Results of square are >= 0 (used by domain-restricted rewrites such as exp(log x) -> x).
template <class... A>
inline constexpr bool known_nonnegative_v<elementwise<ops::square_op, A...>> = true;

template <unary_operand X>
auto square(const X& x, source_site where = source_site::current()) {
  return make_unary<ops::square_op>(x, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_SQUARE_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, square_op)
#endif
