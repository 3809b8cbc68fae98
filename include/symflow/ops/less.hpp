#ifndef SYMFLOW_OPS_LESS_HPP
#define SYMFLOW_OPS_LESS_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include "comparison.hpp"
#endif

namespace symflow {
namespace ops {
// IEEE comparison: false where either operand is NaN; -0 < +0 is false.
struct less_op : comparison_result {
  static constexpr std::string_view name = "less";
  static constexpr std::string_view onnx_op = "Less";  // its ONNX form (expr/onnx_form.hpp)
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "less(a, b): a < b elementwise as a bool mask (operator< in C++). a and b have one dtype and "
      "broadcast (NumPy rules: right-aligned, an extent of 1 stretches); in C++ one of them may be a "
      "plain number. Any dtype. IEEE comparison: false where either operand is NaN; -0 < +0 is false. "
      "No gradient: the result is piecewise constant, so neither operand gets an adjoint. Example: [1, "
      "NaN, -0] < [2, 1, 0] is [true, false, false].";
#endif
  template <class T>
  SYMFLOW_HD static auto apply(T a, T b) {
    return a < b;
  }
#ifndef SYMFLOW_SCALAR_ONLY
  // The same comparison on packets, as a mask of all-ones or zero lanes (where's select reads it).
  template <class P>
  static P mask_packet(const P& a, const P& b) {
    namespace pm = simd::pm;
    return pm::pcmp_lt(a, b);
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <class A, class B>
  requires binary_operands<A, B>
auto operator<(const A& a, const B& b) {
  return make_binary<ops::less_op>(a, b);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_LESS_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, less_op)
#endif
