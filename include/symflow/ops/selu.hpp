#ifndef SYMFLOW_OPS_SELU_HPP
#define SYMFLOW_OPS_SELU_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>

#include "../expr/elementwise.hpp"
#include "exp.hpp"
#include "greater.hpp"
#include "mul.hpp"
#include "sub.hpp"
#include "where.hpp"
#include "../expr/onnx_form.hpp"
#endif

namespace symflow {
namespace ops {
// The self-normalising constants (Klambauer et al. 2017) to double precision; in f32 they round to
// ONNX Selu's default attributes, 1.67326319217681884765625 and 1.05070102214813232421875.
struct selu_constants {
  static constexpr double alpha = 1.6732632423543772848170429916717;
  static constexpr double scale = 1.0507009873554804934193349852946;
};
struct selu_op : floating_result {
  static constexpr std::string_view name = "selu";
  static constexpr std::string_view onnx_op = "Selu";  // its ONNX form (expr/onnx_form.hpp)
#ifndef SYMFLOW_SCALAR_ONLY
  // ONNX Selu's alpha and gamma are attributes: read when they are the constants here (in f32).
  static constexpr std::array<std::string_view, 1> onnx_reads{"Selu"};
  // Other constants: where(x > 0, gamma * x, gamma * alpha * (exp(x) - 1)), as ONNX defines it.
  static void read_onnx(onnx_node_reader& r) {
    const double alpha = r.number("alpha", selu_constants::alpha), gamma = r.number("gamma", selu_constants::scale);
    const onnx_node_reader::value x = r.input(0);
    if (float(alpha) == float(selu_constants::alpha) && float(gamma) == float(selu_constants::scale))
      return r.result(r.apply(name, {x}));
    const dtype t = r.dtype_of(x);
    const auto times = [&](double c, onnx_node_reader::value v) { return r.apply(mul_op::name, {r.scalar(t, c), v}); };
    const onnx_node_reader::value curve = r.apply(sub_op::name, {r.apply(exp_op::name, {x}), r.scalar(t, 1.0)});
    r.result(r.apply(where_op::name, {r.apply(greater_op::name, {x, r.scalar(t, 0.0)}), times(gamma, x), times(gamma * alpha, curve)}));
  }
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "selu(x) = scale * x where x > 0, else scale * alpha * (exp(x) - 1), elementwise, with "
      "alpha = 1.6732632423543772 and scale = 1.0507009873554805 (ONNX Selu's defaults, PyTorch's "
      "selu); f32 or f64. Computed with expm1 (so -0 stays -0), selu(-Inf) = -scale * alpha, NaN "
      "stays NaN. No SIMD form (std::expm1). Gradient: g * scale where x > 0, else g * scale * alpha "
      "* exp(x). Example: selu([-1, 0, 1]) is [-1.1113307, 0, 1.050701].";
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr bool costly = true;
#endif
  template <class T>
  SYMFLOW_HD static T apply(T x) {
    constexpr T scale = T(selu_constants::scale), scaled_alpha = T(selu_constants::alpha * selu_constants::scale);
    return x > T(0) ? scale * x : scaled_alpha * std::expm1(x);
  }
#ifndef SYMFLOW_SCALAR_ONLY
  // Derivative rule: adjoint of the operand given the upstream adjoint g and this node's value y.
  template <class G, class Y, class X>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, const X& x) {
    using T = value_type_of<G>;
    constexpr T scale = T(selu_constants::scale), scaled_alpha = T(selu_constants::alpha * selu_constants::scale);
    return tuple_of(where(x > 0, g * scale, g * (scaled_alpha * exp(x))));
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <unary_operand X>
auto selu(const X& x, source_site where = source_site::current()) {
  return make_unary<ops::selu_op>(x, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_SELU_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, selu_op)
#endif
