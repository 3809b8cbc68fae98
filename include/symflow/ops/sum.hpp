#ifndef SYMFLOW_OPS_SUM_HPP
#define SYMFLOW_OPS_SUM_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <limits>

#include "../expr/reduction.hpp"
#include "../expr/leaves.hpp"
#include "packet_math.hpp"
#include "../expr/onnx_form.hpp"
#endif

namespace symflow {
namespace ops {
struct sum_op {
  static constexpr std::string_view name = "sum";
#ifndef SYMFLOW_SCALAR_ONLY
  // ONNX ReduceSum (axes as an input in opset 13 and later).
  static void write_onnx(onnx_node_writer& w) { write_onnx_reduction(w, "ReduceSum", true); }
  static constexpr std::array<std::string_view, 1> onnx_reads{"ReduceSum"};
  static void read_onnx(onnx_node_reader& r) { read_onnx_reduction(r, name); }
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "sum(x), attributes axes and keepdims: the sum of x's elements over axes; in C++ sum(x) reduces "
      "every axis, sum(x, axes<0, -1>) the listed ones (negative axes count from the end) and sum(x, "
      "axes<1>, keepdims) keeps them as extent 1; a graph lists its axes explicitly (an empty list "
      "reduces nothing). f32, f64, i32 or i64 (the graph interpreter refuses bool). An empty sum is 0. "
      "Floats: IEEE additions, so a NaN, or +Inf with -Inf, gives NaN; the order of the additions is "
      "the evaluator's (compiled code adds in the element type with SIMD accumulators, the graph "
      "interpreter accumulates in double), so the two may differ in the last bits. Integers are added "
      "in the element type and wrap (two's complement), as add does, so an integer sum does not "
      "depend on the order either (the i32 sum of [2147483647, 1] is -2147483648). Gradient: g "
      "broadcast back over the reduced axes. Example: sum with axes [1] of [[1, 2, 3], [4, 5, 6]] is "
      "[6, 15].";
#endif
  template <class T>
  static constexpr T identity() {
    return T(0);
  }
  // Integers wrap as add_op::apply does: signed overflow is undefined behaviour in C++, so they are
  // added in unsigned arithmetic (the hardware's and NumPy's result).
  template <class T>
  SYMFLOW_HD static T combine(T a, T b) {
    if constexpr (std::numeric_limits<T>::has_infinity) return a + b;
    else return T(static_cast<unsigned long long>(a) + static_cast<unsigned long long>(b));
  }
#ifndef SYMFLOW_SCALAR_ONLY
  template <class P>
  static P packet_combine(const P& a, const P& b) {
    return simd::pm::padd(a, b);
  }
  template <class P>
  static auto packet_reduce(const P& p) {
    return simd::pm::predux(p);
  }
  // Derivative rule, given the upstream adjoint g and this node's value y (both with the reduced axes
  // kept as extent 1), the operand x and the number of elements each result combines.
  template <class G, class Y, class X, class Count, class Over>
  static auto gradient([[maybe_unused]] const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const X& x,
                       [[maybe_unused]] const Count& count, const Over&) {
    return tuple_of(g);
  }
  // Linear: the tangent of the result is the same reduction of the operand's tangent.
  static constexpr bool linear = true;
#endif
  template <class T>
  SYMFLOW_HD static T finish(T acc, [[maybe_unused]] std::size_t count) {
    return acc;
  }
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

inline constexpr reduction_function<ops::sum_op> sum{};
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_SUM_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(reduction, sum_op)
#endif
