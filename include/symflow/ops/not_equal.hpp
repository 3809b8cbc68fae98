#ifndef SYMFLOW_OPS_NOT_EQUAL_HPP
#define SYMFLOW_OPS_NOT_EQUAL_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include "comparison.hpp"
#include "../expr/onnx_form.hpp"
#endif

namespace symflow {
namespace ops {
// IEEE comparison: true where either operand is NaN, false for -0 vs +0.
struct not_equal_op : comparison_result {
  static constexpr std::string_view name = "not_equal";
#ifndef SYMFLOW_SCALAR_ONLY
  // ONNX: not(a == b).
  static void write_onnx(onnx_node_writer& w) {
    w.add("Not", {w.add("Equal", {w.operand(0), w.operand(1)})}, {}, true);
  }
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "not_equal(a, b): a != b elementwise as a bool mask (not_equal(a, b); operator!= is not "
      "overloaded in C++). a and b have one dtype and broadcast (NumPy rules: right-aligned, an extent "
      "of 1 stretches); in C++ one of them may be a plain number. Any dtype. IEEE comparison: true "
      "where either operand is NaN (NaN != NaN); -0 != +0 is false. No gradient: the result is "
      "piecewise constant, so neither operand gets an adjoint. Example: not_equal([1, NaN, -0], [1, "
      "NaN, 0]) is [false, true, false].";
#endif
  template <class T>
  SYMFLOW_HD static auto apply(T a, T b) {
    return a != b;
  }
#ifndef SYMFLOW_SCALAR_ONLY
  // The same comparison on packets, as a mask of all-ones or zero lanes (where's select reads it).
  template <class P>
  static P mask_packet(const P& a, const P& b) {
    namespace pm = simd::pm;
    return pm::pandnot(pm::ptrue(a), pm::pcmp_eq(a, b));
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <class A, class B>
  requires binary_operands<A, B>
auto not_equal(const A& a, const B& b, source_site where = source_site::current()) {
  return make_binary<ops::not_equal_op>(a, b, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_NOT_EQUAL_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, not_equal_op)
#endif
