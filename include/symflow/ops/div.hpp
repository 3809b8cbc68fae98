#ifndef SYMFLOW_OPS_DIV_HPP
#define SYMFLOW_OPS_DIV_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>
#include <limits>

#include "../expr/elementwise.hpp"
#include "packet_math.hpp"
#include "../expr/rewrite.hpp"
#endif

namespace symflow {
namespace ops {
// IEEE division for floats (x/0 = ±Inf, 0/0 = NaN; the packet form is the same instruction).
// Integer division truncates toward zero and is total, with no signal: x / 0 = 0 (what AArch64's SDIV
// gives; 0 keeps masked-out lanes harmless) and INT_MIN / -1 = INT_MIN (the quotient wraps, two's
// complement). Both would raise SIGFPE on x86 and are undefined behaviour in C++, so neither reaches
// the hardware division. The typed evaluator, the interpreter and generated passes all call this.
struct div_op : same_dtype_result {
  static constexpr std::string_view name = "div";
  static constexpr std::string_view onnx_op = "Div";  // its ONNX form (expr/onnx_form.hpp)
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "div(a, b) = a / b (operator/), elementwise. a and b have one dtype and broadcast (NumPy rules: "
      "right-aligned, an extent of 1 stretches); in C++ one of them may be a plain number. Any dtype. "
      "Floats follow IEEE 754: x / ±0 = ±Inf by the signs, 0 / 0 = NaN, x / ±Inf = ±0, NaN propagates. "
      "Integer division truncates toward zero, as C (-7 / 2 = -3; NumPy's // floors) and never traps: "
      "x / 0 = 0 and INT_MIN / -1 = INT_MIN (the quotient wraps); the typed evaluator, the interpreter "
      "and generated code agree. For bool, a / true = a and a / false = false. simplify: x / 1 -> x, "
      "and a literal 0 divided by x gives 0 (also where x is 0 or NaN). Gradient: g / b for a, -g * y "
      "/ b for b (y the quotient). Example: [1, -7] / [4, 2] is [0.25, -3.5] in f32 and [0, -3] in "
      "i32.";
#endif
  template <class T>
  SYMFLOW_HD static T apply(T a, T b) {
    if constexpr (!std::numeric_limits<T>::has_infinity) {
      if (b == T(0)) return T(0);
      if (b == T(-1)) return T(0ull - static_cast<unsigned long long>(a));  // for bool, T(-1) is true: a / 1
    }
    return T(a / b);
  }
#ifndef SYMFLOW_SCALAR_ONLY
  template <class P>
  static P packet(const P& a, const P& b) {
    return simd::pm::pdiv(a, b);
  }
  // x / 1 -> x, 0 / x -> 0 (taking x != 0, as the forward value does).
  template <class A, class B>
  static auto simplify(const A& a, const B&) {
    using T = value_type_of<A>;
    if constexpr (is_one_v<B>) return a;
    else if constexpr (is_zero_v<A>) return zero<T>{};
    else return no_rewrite{};
  }
  // Derivative rule: adjoints of (a, b) given the upstream adjoint g and this node's value y.
  template <class G, class Y, class A, class B>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const A& a,
                       [[maybe_unused]] const B& b) {
    return tuple_of(g / b, -(g * y / b));
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <class A, class B>
  requires binary_operands<A, B>
auto operator/(const A& a, const B& b) {
  return make_binary<ops::div_op>(a, b);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_DIV_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, div_op)
#endif
