#ifndef SYMFLOW_OPS_ABS_HPP
#define SYMFLOW_OPS_ABS_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>
#include <limits>

#include "../expr/elementwise.hpp"
#include "packet_math.hpp"
#include "../expr/rewrite.hpp"
#endif

namespace symflow {
namespace ops {
// abs clears the sign bit of a float: abs(-0) = +0, abs(-NaN) = +NaN, as the packet form (pabs)
// does. Integers wrap: abs(INT_MIN) = INT_MIN (two's complement, as NumPy; -INT_MIN is undefined
// behaviour in C++, so the negation is done in unsigned arithmetic).
struct abs_op : same_dtype_result {
  static constexpr std::string_view name = "abs";
  static constexpr std::string_view onnx_op = "Abs";  // its ONNX form (expr/onnx_form.hpp)
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "abs(x) = |x|, elementwise; any dtype. Floats get their sign bit cleared: abs(-0) = +0, "
      "abs(±Inf) = +Inf, and a NaN stays NaN with its sign bit cleared. Integers wrap: abs(INT_MIN) = "
      "INT_MIN (two's complement, as NumPy gives). bool is unchanged. Gradient: g * sign(x), so 0 at x "
      "= ±0. Example: abs(x) for x = [-2, -0, 3] is [2, 0, 3].";
#endif
  template <class T>
  SYMFLOW_HD static T apply(T x) {
    if constexpr (std::numeric_limits<T>::has_infinity) return std::copysign(x, T(1));
    else return x < T(0) ? T(0ull - static_cast<unsigned long long>(x)) : x;
  }
#ifndef SYMFLOW_SCALAR_ONLY
  template <class P>
  static P packet(const P& x) {
    return simd::pm::pabs(x);
  }
  // Derivative rule: adjoint of the operand given the upstream adjoint g and this node's value y.
  template <class G, class Y, class X>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const X& x) {
    return tuple_of(g * sign(x));
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

// Results of abs are >= 0 (used by domain-restricted rewrites such as exp(log x) -> x).
template <class... A>
inline constexpr bool known_nonnegative_v<elementwise<ops::abs_op, A...>> = true;

template <unary_operand X>
auto abs(const X& x, source_site where = source_site::current()) {
  return make_unary<ops::abs_op>(x, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_ABS_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, abs_op)
#endif
