#ifndef SYMFLOW_OPS_SUB_HPP
#define SYMFLOW_OPS_SUB_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>
#include <limits>

#include "../expr/elementwise.hpp"
#include "packet_math.hpp"
#include "../expr/rewrite.hpp"
#endif

namespace symflow {
namespace ops {
// IEEE subtraction for floats (the packet form is the same instruction). Integers wrap (two's complement, what the hardware and NumPy do): signed overflow is undefined
// behaviour in C++, so integer operands are computed in unsigned arithmetic.
struct sub_op : same_dtype_result {
  static constexpr std::string_view name = "sub";
  static constexpr std::string_view onnx_op = "Sub";  // its ONNX form (expr/onnx_form.hpp)
  // One instruction in registers: the interpreter may run it in the loop of the op feeding it
  // (runtime/chained_kernels.hpp).
  static constexpr bool chains = true;
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "sub(a, b) = a - b (binary operator-), elementwise. a and b have one dtype and broadcast (NumPy "
      "rules: right-aligned, an extent of 1 stretches); in C++ one of them may be a plain number. Any "
      "dtype. Floats follow IEEE 754: NaN propagates, Inf - Inf = NaN, +0 - +0 = +0. Integers wrap "
      "(two's complement); for bool it is a logical xor. simplify: x - 0 -> x, 0 - x -> -x, and x - x "
      "-> 0 where both sides are one value by their types (even though x - x is NaN for an infinite or "
      "NaN x). Gradient: g for a, -g for b. Example: [5, 1] - [2, 3] is [3, -2].";
#endif
  template <class T>
  SYMFLOW_HD static T apply(T a, T b) {
    if constexpr (std::numeric_limits<T>::has_infinity) return a - b;
    else return T(static_cast<unsigned long long>(a) - static_cast<unsigned long long>(b));
  }
#ifndef SYMFLOW_SCALAR_ONLY
  template <class P>
  static P packet(const P& a, const P& b) {
    return simd::pm::psub(a, b);
  }
  // x - 0 -> x, 0 - x -> -x, x - x -> 0, literal folding.
  template <class A, class B>
  static auto simplify(const A& a, const B& b) {
    using T = value_type_of<A>;
    if constexpr (is_zero_v<B>) return a;
    else if constexpr (is_zero_v<A>) return -b;
    else if constexpr (is_static_literal_v<A> && is_static_literal_v<B>)
      return static_literal<T, (long long)(A::value - B::value)>{};
    else if constexpr (same_value_v<A, B>) return zero<T>{};
    else return no_rewrite{};
  }
  // Derivative rule: adjoints of (a, b) given the upstream adjoint g and this node's value y.
  template <class G, class Y, class A, class B>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const A& a,
                       [[maybe_unused]] const B& b) {
    return tuple_of(g, -g);
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <class A, class B>
  requires binary_operands<A, B>
auto operator-(const A& a, const B& b) {
  return make_binary<ops::sub_op>(a, b);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_SUB_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, sub_op)
#endif
