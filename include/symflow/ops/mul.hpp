#ifndef SYMFLOW_OPS_MUL_HPP
#define SYMFLOW_OPS_MUL_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>
#include <limits>

#include "../expr/elementwise.hpp"
#include "packet_math.hpp"
#include "../expr/rewrite.hpp"
#endif

namespace symflow {
namespace ops {
// IEEE multiplication for floats (the packet form is the same instruction). Integers wrap (two's complement, what the hardware and NumPy do): signed overflow is undefined
// behaviour in C++, so integer operands are computed in unsigned arithmetic.
struct mul_op : same_dtype_result {
  static constexpr std::string_view name = "mul";
  static constexpr std::string_view onnx_op = "Mul";  // its ONNX form (expr/onnx_form.hpp)
  // One instruction in registers: the interpreter may run it in the loop of the op feeding it
  // (runtime/chained_kernels.hpp).
  static constexpr bool chains = true;
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "mul(a, b) = a * b (operator*), elementwise. a and b have one dtype and broadcast (NumPy rules: "
      "right-aligned, an extent of 1 stretches); in C++ one of them may be a plain number. Any dtype. "
      "Floats follow IEEE 754: NaN propagates, ±Inf * 0 = NaN, the sign of a zero result is the xor of "
      "the signs (-0 * 5 = -0). Integers wrap (two's complement: 46341 * 46341 in i32 is -2147479015); "
      "for bool it is a logical and. simplify: a literal 0 factor gives 0 (x * 0 -> 0, also for a NaN "
      "or infinite x) and a literal 1 is dropped. Gradient: g * b for a, g * a for b. Example: [1, 2, "
      "3] * 2 is [2, 4, 6].";
#endif
  template <class T>
  SYMFLOW_HD static T apply(T a, T b) {
    if constexpr (std::numeric_limits<T>::has_infinity) return a * b;
    else return T(static_cast<unsigned long long>(a) * static_cast<unsigned long long>(b));
  }
#ifndef SYMFLOW_SCALAR_ONLY
  template <class P>
  static P packet(const P& a, const P& b) {
    return simd::pm::pmul(a, b);
  }
  // x * 0 -> 0, x * 1 -> x, literal folding (the result broadcasts where it is used).
  template <class A, class B>
  static auto simplify(const A& a, const B& b) {
    using T = value_type_of<A>;
    if constexpr (is_zero_v<A> || is_zero_v<B>) return zero<T>{};
    else if constexpr (is_one_v<B>) return a;
    else if constexpr (is_one_v<A>) return b;
    else if constexpr (is_static_literal_v<A> && is_static_literal_v<B>)
      return static_literal<T, (long long)(A::value * B::value)>{};
    else return no_rewrite{};
  }
  // Derivative rule: adjoints of (a, b) given the upstream adjoint g and this node's value y.
  template <class G, class Y, class A, class B>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const A& a,
                       [[maybe_unused]] const B& b) {
    return tuple_of(g * b, g * a);
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <class A, class B>
  requires binary_operands<A, B>
auto operator*(const A& a, const B& b) {
  return make_binary<ops::mul_op>(a, b);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_MUL_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, mul_op)
#endif
