#ifndef SYMFLOW_OPS_MAX_HPP
#define SYMFLOW_OPS_MAX_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>
#include <limits>

#include "../expr/reduction.hpp"
#include "../expr/leaves.hpp"
#include "maximum.hpp"
#include "extremum_rules.hpp"
#include "packet_math.hpp"
#include "../expr/onnx_form.hpp"
#endif

namespace symflow {
namespace ops {
struct max_op {
  static constexpr std::string_view name = "max";
#ifndef SYMFLOW_SCALAR_ONLY
  // ONNX ReduceMax.
  static void write_onnx(onnx_node_writer& w) { write_onnx_reduction(w, "ReduceMax", false); }
  static constexpr std::array<std::string_view, 2> onnx_reads{"ReduceMax", "GlobalMaxPool"};
  static void read_onnx(onnx_node_reader& r) {
    if (r.op_type() == "GlobalMaxPool") return read_onnx_global_pool(r, name);
    read_onnx_reduction(r, name);
  }
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "max(x), attributes axes and keepdims: the largest element over axes; in C++ max(x) reduces "
      "every axis, max(x, axes<0, -1>) the listed ones (negative axes count from the end) and max(x, "
      "axes<1>, keepdims) keeps them as extent 1; a graph lists its axes explicitly (an empty list "
      "reduces nothing). f32, f64, i32 or i64 (the graph interpreter refuses bool). Combined with "
      "maximum's IEEE rules, so the result does not depend on the order of combination: a NaN anywhere "
      "in a slice gives NaN, and +0 beats -0. An empty slice gives -Inf (floats) or the dtype's lowest "
      "value (integers). Gradient: the elements equal to the maximum share g evenly (k ties get g / k "
      "each; -0 and +0 tie), the others get 0; a slice whose maximum is NaN gets NaN throughout. "
      "Example: max with axes [1] of [[1, 5, 5], [2, NaN, 0]] is [5, NaN], and its gradient for g = "
      "[1, 1] is [[0, 0.5, 0.5], [NaN, NaN, NaN]].";
#endif
  // The result does not depend on the order elements are combined in (see combine below): any
  // evaluator may accumulate in T, and results agree bit for bit across evaluators.
  static constexpr bool order_independent = true;
  template <class T>
  static constexpr T identity() {
    return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
  }
  // maximum_op's semantics (ops/maximum.hpp), so that the result does not depend on the order elements
  // are combined in (packets, threads, the interpreter's loop): a NaN anywhere gives NaN, and
  // -0 < +0. Restated here because a device compilation sees this file alone.
  template <class T>
  SYMFLOW_HD static T combine(T a, T b) {
    if constexpr (std::numeric_limits<T>::has_infinity) {
      if (a != a) return a;
      if (b != b) return b;
      if (a == b) return std::copysign(T(1), a) < T(0) ? b : a;  // equal: only ±0 differ
    }
    return a < b ? b : a;
  }
#ifndef SYMFLOW_SCALAR_ONLY
  template <class P>
  static P packet_combine(const P& a, const P& b) {
    return maximum_op::packet(a, b);
  }
  template <class P>
  static auto packet_reduce(const P& p) {
    // Lane by lane with combine: Eigen's predux_max leaves NaN and the sign of zero unspecified.
    return simd::fold_lanes(p, [](auto a, auto b) { return combine(a, b); });
  }
  // The row loop's quick combine (plain vector max, NaN and zero results redone exactly).
  using unchecked = unchecked_extremum<true>;
  // Derivative rules: ties share the adjoint evenly (ops/extremum_rules.hpp).
  template <class G, class Y, class X, class Count, class Over>
  static auto gradient(const G& g, const Y& y, const X& x, const Count&, const Over& over) {
    return extremum_gradient(g, y, x, over);
  }
  template <class TX, class Y, class X, class Over>
  static auto tangent_operand(const TX& tx, const Y& y, const X& x, const Over& over) {
    return extremum_tangent(tx, y, x, over);
  }
#endif
  template <class T>
  SYMFLOW_HD static T finish(T acc, [[maybe_unused]] std::size_t count) {
    return acc;
  }
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

inline constexpr reduction_function<ops::max_op> max{};
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_MAX_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(reduction, max_op)
#endif
