#ifndef SYMFLOW_OPS_SQRT_HPP
#define SYMFLOW_OPS_SQRT_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>

#include "../expr/elementwise.hpp"
#include "packet_math.hpp"
#include "../expr/rewrite.hpp"
#endif

namespace symflow {
namespace ops {
struct sqrt_op : floating_result {
  static constexpr std::string_view name = "sqrt";
  static constexpr std::string_view onnx_op = "Sqrt";  // its ONNX form (expr/onnx_form.hpp)
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "sqrt(x), elementwise; f32 or f64, correctly rounded (the vectorized form gives std::sqrt's "
      "bits). sqrt(-0) = -0, sqrt of a negative number is NaN, sqrt(+Inf) = +Inf, NaN stays NaN. "
      "Gradient: g * 0.5 / y (y = sqrt(x)), so +Inf times g at x = 0. Example: sqrt(x) for x = [4, 2, "
      "-1] is [2, 1.4142135, NaN].";
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  // Costs more to recompute than to read back: a repeat within one fused loop reuses the value.
  static constexpr bool costly = true;
#endif
  template <class T>
  SYMFLOW_HD static T apply(T x) {
    return std::sqrt(x);
  }
#ifndef SYMFLOW_SCALAR_ONLY
  template <class P>
  static P packet(const P& x) {
    return simd::exact_sqrt(x);  // IEEE, bit for bit std::sqrt
  }
  // Derivative rule: adjoint of the operand given the upstream adjoint g and this node's value y.
  template <class G, class Y, class X>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const X& x) {
    return tuple_of(g * 0.5 / y);
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

// Results of sqrt are >= 0 (used by domain-restricted rewrites such as exp(log x) -> x).
template <class... A>
inline constexpr bool known_nonnegative_v<elementwise<ops::sqrt_op, A...>> = true;

template <unary_operand X>
auto sqrt(const X& x, source_site where = source_site::current()) {
  return make_unary<ops::sqrt_op>(x, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_SQRT_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, sqrt_op)
#endif
