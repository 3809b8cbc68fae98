#ifndef SYMFLOW_OPS_CEIL_HPP
#define SYMFLOW_OPS_CEIL_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>

#include "../expr/elementwise.hpp"
#include "packet_math.hpp"
#endif
// Outside the host-only part: rounding_op, the base, is also what NVRTC compiles (op_headers.hpp).
#include "floor.hpp"

namespace symflow {
namespace ops {
struct ceil_op : rounding_op<rounding_detail::toward_positive> {
  static constexpr std::string_view name = "ceil";
  static constexpr std::string_view onnx_op = "Ceil";  // its ONNX form (expr/onnx_form.hpp)
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "ceil(x), elementwise: the smallest integer not less than x, as a value of x's dtype; f32 or f64. "
      "Exact (std::ceil; SIMD code rounds with one instruction, the same bits): ceil(±Inf) = ±Inf, "
      "ceil(-0) = -0 and ceil(x) = -0 for -1 < x < 0 (as NumPy and PyTorch), NaN stays NaN, and values "
      "too large to have a fraction (|x| >= 2^23 in f32, 2^52 in f64) are unchanged, so ceil(1e30) = "
      "1e30. Gradient: 0 (the derivative is 0 wherever it exists). Example: ceil(x) for x = [-1.5, "
      "-0.5, 0.5, 2] is [-1, -0, 1, 2].";
#endif
  template <class T>
  SYMFLOW_HD static T apply(T x) {
    return std::ceil(x);
  }
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <unary_operand X>
auto ceil(const X& x, source_site where = source_site::current()) {
  return make_unary<ops::ceil_op>(x, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_CEIL_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, ceil_op)
#endif
