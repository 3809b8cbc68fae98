#ifndef SYMFLOW_OPS_ERF_HPP
#define SYMFLOW_OPS_ERF_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>

#include "../expr/elementwise.hpp"
#include "exp.hpp"
#include "mul.hpp"
#include "neg.hpp"
#include "square.hpp"
#endif

namespace symflow {
namespace ops {
struct erf_op : floating_result {
  static constexpr std::string_view name = "erf";
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "erf(x) = 2/sqrt(pi) * integral from 0 to x of exp(-t^2) dt, the error function, elementwise; f32 "
      "or f64 (std::erf: scalar code only, no SIMD form, so a result does not depend on the SIMD width). "
      "erf(+Inf) = 1, erf(-Inf) = -1, erf(-0) = -0, NaN stays NaN; erf(x) rounds to ±1 for |x| above "
      "about 3.9 in f32 (5.9 in f64). As torch.erf and ONNX Erf. Gradient: g * 2/sqrt(pi) * exp(-x^2). "
      "Example: erf(x) for x = [0, 0.5, -1, Inf] is [0, 0.5204999, -0.8427008, 1].";
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  // Costs more to recompute than to read back: a repeat within one fused loop reuses the value.
  static constexpr bool costly = true;
#endif
  // std::erf everywhere (host and device). Eigen's perf is an approximation whose bits differ from
  // std::erf's, so the op has no packet form: SIMD loops call this function lane by lane.
  template <class T>
  SYMFLOW_HD static T apply(T x) {
    return std::erf(x);
  }
#ifndef SYMFLOW_SCALAR_ONLY
  // Derivative rule: adjoint of the operand given the upstream adjoint g and this node's value y.
  template <class G, class Y, class X>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const X& x) {
    using T = value_type_of<G>;
    return tuple_of(g * (T(1.12837916709551257390) * exp(-square(x))));  // 2 / sqrt(pi)
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <unary_operand X>
auto erf(const X& x, source_site where = source_site::current()) {
  return make_unary<ops::erf_op>(x, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_ERF_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, erf_op)
#endif
