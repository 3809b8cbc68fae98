#ifndef SYMFLOW_OPS_POW_HPP
#define SYMFLOW_OPS_POW_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>

#include "../expr/elementwise.hpp"
#include "cast.hpp"
#include "packet_math.hpp"
#include "../expr/onnx_form.hpp"
#endif

namespace symflow {
namespace ops {
// C's pow (std::pow, scalar only): NaN in gives NaN except pow(x, ±0) = 1 and pow(1, y) = 1, as
// IEEE 754 and NumPy; pow(-0, -1) = -Inf. Floating dtypes only.
struct pow_op : floating_result {
  static constexpr std::string_view name = "pow";
  static constexpr std::string_view onnx_op = "Pow";  // its ONNX form (expr/onnx_form.hpp)
#ifndef SYMFLOW_SCALAR_ONLY
  // ONNX Pow's exponent may have another dtype than the base, and both may be integers: computed in
  // the base's dtype, or in f64 for an integer base and converted back (exact while |result| < 2^53).
  static constexpr std::array<std::string_view, 1> onnx_reads{"Pow"};
  static void read_onnx(onnx_node_reader& r) {
    const onnx_node_reader::value base = r.input(0), exponent = r.input(1);
    const dtype t = r.dtype_of(base), compute = is_floating_dtype(t) ? t : dtype::f64;
    const auto as = [&](onnx_node_reader::value v, dtype to) {
      return r.dtype_of(v) == to ? v : r.apply(cast_op<float>::name, {v}, {{"to", std::string(dtype_name(to))}});
    };
    r.result(as(r.apply(name, {as(base, compute), as(exponent, compute)}), t));
  }
  static constexpr std::string_view doc =
      "pow(a, b) = a^b, elementwise, by C's pow (std::pow; no SIMD form); f32 or f64. a and b have one "
      "dtype and broadcast (NumPy rules: right-aligned, an extent of 1 stretches); in C++ one of them "
      "may be a plain number. pow(x, ±0) = 1 and pow(1, y) = 1 even for a NaN x or y, otherwise NaN in "
      "gives NaN; a negative base with a non-integer exponent gives NaN (pow(-8, 1/3)); pow(+0, -1) = "
      "+Inf, pow(-0, -1) = -Inf, pow(2, -Inf) = 0. Gradient: g * b * pow(a, b - 1) for a and g * y * "
      "log(a) for b (y = a^b), taken literally: at a = 0 the exponent's gradient is NaN (0 * -Inf), so "
      "is the base's when b = 0, and the exponent's is NaN wherever a < 0. Example: pow([2, 9, -8], "
      "[3, 0.5, 2]) is [8, 3, 64].";
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr bool costly = true;
#endif
  template <class T>
  SYMFLOW_HD static auto apply(T a, T b) {
    return std::pow(a, b);
  }
#ifndef SYMFLOW_SCALAR_ONLY

  // Derivative rule: adjoints of (a, b) given the upstream adjoint g and this node's value y.
  template <class G, class Y, class A, class B>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const A& a,
                       [[maybe_unused]] const B& b) {
    return tuple_of(g * b * pow(a, b - 1), g * y * log(a));
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <class A, class B>
  requires binary_operands<A, B>
auto pow(const A& a, const B& b, source_site where = source_site::current()) {
  return make_binary<ops::pow_op>(a, b, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_POW_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, pow_op)
#endif
