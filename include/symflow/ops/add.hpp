#ifndef SYMFLOW_OPS_ADD_HPP
#define SYMFLOW_OPS_ADD_HPP
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
// IEEE addition for floats (the packet form is the same instruction). Integers wrap (two's complement, what the hardware and NumPy do): signed overflow is undefined
// behaviour in C++, so integer operands are computed in unsigned arithmetic.
struct add_op : same_dtype_result {
  static constexpr std::string_view name = "add";
  static constexpr std::string_view onnx_op = "Add";  // its ONNX form (expr/onnx_form.hpp)
  // One instruction in registers: the interpreter may run it in the loop of the op feeding it
  // (runtime/chained_kernels.hpp).
  static constexpr bool chains = true;
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "add(a, b) = a + b (operator+), elementwise. a and b have one dtype and broadcast (NumPy rules: "
      "right-aligned, an extent of 1 stretches); in C++ one of them may be a plain number. Any dtype. "
      "Floats follow IEEE 754: NaN propagates, +Inf + -Inf = NaN, -0 + -0 = -0 and -0 + +0 = +0. "
      "Integers wrap (two's complement); for bool it is a logical or. simplify drops a literal 0 (x + "
      "0 -> x, so -0 plus a literal 0 stays -0) and turns x + x into 2 * x. Gradient: g for both "
      "operands, summed back to an operand's shape where it was broadcast. Example: [1, 2] + [[10], "
      "[20]] is [[11, 12], [21, 22]].";
#endif
  template <class T>
  SYMFLOW_HD static T apply(T a, T b) {
    if constexpr (std::numeric_limits<T>::has_infinity) return a + b;
    else return T(static_cast<unsigned long long>(a) + static_cast<unsigned long long>(b));
  }
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr known_function computes = known_function::addition;
  template <class P>
  static P packet(const P& a, const P& b) {
    return simd::pm::padd(a, b);
  }
  // x + 0 -> x, 0 + x -> x, x + x -> 2x, c*a + c*b -> c*(a + b), literal folding.
  template <class A, class B>
  static auto simplify(const A& a, const B& b) {
    using T = value_type_of<A>;
    if constexpr (is_zero_v<B>) return a;
    else if constexpr (is_zero_v<A>) return b;
    else if constexpr (is_static_literal_v<A> && is_static_literal_v<B>)
      return static_literal<T, (long long)(A::value + B::value)>{};
    else if constexpr (same_value_v<A, B>) return static_literal<T, 2>{} * a;
    else if constexpr (is_mul_v<A> && is_mul_v<B>) {
      using A0 = std::tuple_element_t<0, operands_of<decltype(a)>>;
      using A1 = std::tuple_element_t<1, operands_of<decltype(a)>>;
      using B0 = std::tuple_element_t<0, operands_of<decltype(b)>>;
      using B1 = std::tuple_element_t<1, operands_of<decltype(b)>>;
      if constexpr (same_value_v<A0, B0>) return std::get<0>(a.args()) * (std::get<1>(a.args()) + std::get<1>(b.args()));
      else if constexpr (same_value_v<A1, B1>) return (std::get<0>(a.args()) + std::get<0>(b.args())) * std::get<1>(a.args());
      else return no_rewrite{};
    } else return no_rewrite{};
  }
  // Derivative rule: adjoints of (a, b) given the upstream adjoint g and this node's value y.
  template <class G, class Y, class A, class B>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const A& a,
                       [[maybe_unused]] const B& b) {
    return tuple_of(g, g);
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <class A, class B>
  requires binary_operands<A, B>
auto operator+(const A& a, const B& b) {
  return make_binary<ops::add_op>(a, b);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_ADD_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, add_op)
#endif
