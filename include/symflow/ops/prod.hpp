#ifndef SYMFLOW_OPS_PROD_HPP
#define SYMFLOW_OPS_PROD_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <limits>

#include "../expr/reduction.hpp"
#include "../expr/leaves.hpp"
#include "div.hpp"
#include "equal.hpp"
#include "mul.hpp"
#include "packet_math.hpp"
#include "sum.hpp"
#include "where.hpp"
#include "../expr/onnx_form.hpp"
#endif

namespace symflow {
namespace ops {
struct prod_op {
  static constexpr std::string_view name = "prod";
#ifndef SYMFLOW_SCALAR_ONLY
  // ONNX ReduceProd.
  static void write_onnx(onnx_node_writer& w) { write_onnx_reduction(w, "ReduceProd", false); }
  static constexpr std::array<std::string_view, 1> onnx_reads{"ReduceProd"};
  static void read_onnx(onnx_node_reader& r) { read_onnx_reduction(r, name); }
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "prod(x), attributes axes and keepdims: the product of x's elements over axes (ONNX ReduceProd, "
      "NumPy and PyTorch prod); in C++ prod(x) reduces every axis, prod(x, axes<0, -1>) the listed ones "
      "(negative axes count from the end) and prod(x, axes<1>, keepdims) keeps them as extent 1; a "
      "graph lists its axes explicitly. f32, f64, i32 or i64 (the graph interpreter refuses bool). An "
      "empty product is 1. Floats: IEEE multiplications, so a NaN, or 0 with Inf, gives NaN; the order "
      "of the multiplications is the evaluator's (compiled code multiplies in the element type with "
      "SIMD accumulators, the graph interpreter in double), so the two may differ in the last bits, and "
      "where a partial product leaves the element type's range (overflow to Inf, underflow to 0) also in "
      "more. Integers multiply in the element type and wrap (two's complement). Gradient: g times the "
      "product of the other elements of the slice, y / x where x is not 0; at a 0 the product of the "
      "slice's other elements if it is the slice's only 0, else 0 (as PyTorch). Example: prod with axes "
      "[1] of [[1, 2, 3], [4, 0, 6]] is [6, 0], and its gradient for g = [1, 1] is [[6, 3, 2], [0, 24, "
      "0]].";
  // Its rounding error is relative to the result (a product), not to the operand's magnitudes.
  static constexpr bool relative_rounding = true;
#endif
  template <class T>
  static constexpr T identity() {
    return T(1);
  }
  // Integers wrap as mul_op does: signed overflow is undefined behaviour in C++, so they are
  // multiplied in unsigned arithmetic (the hardware's and NumPy's result).
  template <class T>
  SYMFLOW_HD static T combine(T a, T b) {
    if constexpr (std::numeric_limits<T>::has_infinity) return a * b;
    else return T(static_cast<unsigned long long>(a) * static_cast<unsigned long long>(b));
  }
#ifndef SYMFLOW_SCALAR_ONLY
  template <class P>
  static P packet_combine(const P& a, const P& b) {
    return simd::pm::pmul(a, b);
  }
  template <class P>
  static auto packet_reduce(const P& p) {
    return simd::fold_lanes(p, [](auto a, auto b) { return combine(a, b); });
  }
  // The product of a slice's other elements, for each element of x: y / x away from zeros; at a
  // zero, the product of the nonzero elements when it is the slice's only zero, else 0. (y / x alone
  // would give 0 / 0 at a zero.)
  template <class Y, class X, class Over>
  static auto others_product(const Y& y, const X& x, const Over& over) {
    using T = value_type_of<X>;
    const auto is_zero = equal(x, zero<T>{});
    const auto zeros = over(sum_op{}, where(is_zero, one<T>{}, zero<T>{}));
    const auto nonzero_product = over(prod_op{}, where(is_zero, one<T>{}, x));
    return where(is_zero, where(equal(zeros, one<T>{}), nonzero_product, zero<T>{}), y / x);
  }
  template <class G, class Y, class X, class Count, class Over>
  static auto gradient(const G& g, const Y& y, const X& x, const Count&, const Over& over) {
    return tuple_of(g * others_product(y, x, over));
  }
  // Forward: each element's share of the tangent (the caller sums them over the reduced axes).
  template <class TX, class Y, class X, class Over>
  static auto tangent_operand(const TX& tx, const Y& y, const X& x, const Over& over) {
    return tx * others_product(y, x, over);
  }
#endif
  template <class T>
  SYMFLOW_HD static T finish(T acc, [[maybe_unused]] std::size_t count) {
    return acc;
  }
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

inline constexpr reduction_function<ops::prod_op> prod{};
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_PROD_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(reduction, prod_op)
#endif
