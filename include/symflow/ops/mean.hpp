#ifndef SYMFLOW_OPS_MEAN_HPP
#define SYMFLOW_OPS_MEAN_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <limits>

#include "../expr/reduction.hpp"
#include "../expr/leaves.hpp"
#include "packet_math.hpp"
#include "../expr/onnx_form.hpp"
#endif

namespace symflow {
namespace ops {
struct mean_op {
  static constexpr std::string_view name = "mean";
#ifndef SYMFLOW_SCALAR_ONLY
  // ONNX ReduceMean.
  static void write_onnx(onnx_node_writer& w) { write_onnx_reduction(w, "ReduceMean", false); }
  static constexpr std::array<std::string_view, 2> onnx_reads{"ReduceMean", "GlobalAveragePool"};
  static void read_onnx(onnx_node_reader& r) {
    if (r.op_type() == "GlobalAveragePool") return read_onnx_global_pool(r, name);
    read_onnx_reduction(r, name);
  }
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "mean(x), attributes axes and keepdims: the sum over axes (accumulated as sum's) divided by the "
      "number of elements reduced; in C++ mean(x) reduces every axis, mean(x, axes<0, -1>) the listed "
      "ones (negative axes count from the end) and mean(x, axes<1>, keepdims) keeps them as extent 1; "
      "a graph lists its axes explicitly (an empty list reduces nothing). f32, f64, i32 or i64 (the "
      "graph interpreter refuses bool). Integer means are the sum, wrapped as sum's, divided by the "
      "count and truncated toward zero (the mean of [-1, -2, -4] is -2). An empty mean is NaN for "
      "floats (0 for integers); a NaN, or +Inf with -Inf, gives NaN. "
      "Gradient: g / count to every reduced element. Example: mean with axes [1] of [[1, 2, 3], [4, 5, "
      "7]] is [2, 5.3333335].";
#endif
  template <class T>
  static constexpr T identity() {
    return T(0);
  }
  // Integers wrap as add_op::apply does (see sum_op::combine).
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
    return tuple_of(g / count);
  }
  // Linear: the tangent of the result is the same reduction of the operand's tangent.
  static constexpr bool linear = true;
#endif
  // Integers divide in 64 bits: T(count) could wrap to 0 or -1 for an i32 mean of 2^32 - 1 elements.
  template <class T>
  SYMFLOW_HD static T finish(T acc, [[maybe_unused]] std::size_t count) {
    if constexpr (std::numeric_limits<T>::has_infinity) return count ? T(acc / T(count)) : std::numeric_limits<T>::quiet_NaN();
    else return count ? T(static_cast<long long>(acc) / static_cast<long long>(count)) : T(0);
  }
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

inline constexpr reduction_function<ops::mean_op> mean{};
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_MEAN_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(reduction, mean_op)
#endif
