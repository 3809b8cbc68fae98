#ifndef SYMFLOW_OPS_ELU_HPP
#define SYMFLOW_OPS_ELU_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>

#include "../expr/elementwise.hpp"
#include "exp.hpp"
#include "less.hpp"
#include "mul.hpp"
#include "sub.hpp"
#include "where.hpp"
#include "../expr/onnx_form.hpp"
#endif

namespace symflow {
namespace ops {
// alpha is an operand, as prelu's slope is (prelu.hpp says why).
struct elu_op : floating_result {
  static constexpr std::string_view name = "elu";
#ifndef SYMFLOW_SCALAR_ONLY
  // ONNX Elu takes alpha as a number; here alpha is an operand: where(x < 0, alpha * (exp(x) - 1), x).
  static void write_onnx(onnx_node_writer& w) {
    const dtype t = w.operand_dtype(0);
    const std::string x = w.operand(0);
    const std::string negative = w.add("Less", {x, w.scalar(t, 0.0)});
    const std::string curve = w.add("Mul", {w.operand(1), w.add("Sub", {w.add("Exp", {x}), w.scalar(t, 1.0)})});
    w.add("Where", {negative, curve, x}, {}, true);
  }
  static constexpr std::array<std::string_view, 1> onnx_reads{"Elu"};
  static void read_onnx(onnx_node_reader& r) {
    const onnx_node_reader::value x = r.input(0);
    r.result(r.apply(name, {x, r.scalar(r.dtype_of(x), r.number("alpha", 1.0))}));
  }
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "elu(x, alpha = 1) = alpha * (exp(x) - 1) where x < 0, else x, elementwise (ONNX Elu, PyTorch's "
      "elu); x and alpha have one dtype, f32 or f64, and broadcast; in C++ alpha may be a plain number. "
      "Computed with expm1, so small negative x keep their digits; ±0 and NaN stay as they are, "
      "elu(-Inf) = -alpha. No SIMD form (std::expm1, so no result depends on the SIMD width). "
      "Gradient: g * alpha * exp(x) where x < 0, else g; for alpha g * (exp(x) - 1) where x < 0, else 0. "
      "Example: elu([-1, 0, 2]) is [-0.63212055, 0, 2].";
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  // Costs more to recompute than to read back: a repeat within one fused loop reuses the value.
  static constexpr bool costly = true;
#endif
  template <class T>
  SYMFLOW_HD static T apply(T x, T alpha) {
    return x < T(0) ? alpha * std::expm1(x) : x;
  }
#ifndef SYMFLOW_SCALAR_ONLY
  // Derivative rule: adjoints of (x, alpha) given the upstream adjoint g and this node's value y.
  template <class G, class Y, class X, class A>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, const X& x, const A& alpha) {
    using T = value_type_of<G>;
    const auto e = exp(x);
    return tuple_of(where(x < 0, g * (alpha * e), g), where(x < 0, g * (e - 1), zero<T>{}));
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

// elu(x, alpha): alpha * (exp(x) - 1) where x < 0, else x.
template <class X, class A>
  requires binary_operands<X, A>
auto elu(const X& x, const A& alpha, source_site where = source_site::current()) {
  return make_binary<ops::elu_op>(x, alpha, where);
}
template <unary_operand X>
auto elu(const X& x, source_site where = source_site::current()) {
  return make_binary<ops::elu_op>(x, 1.0, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_ELU_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, elu_op)
#endif
