#ifndef SYMFLOW_OPS_ROUND_HPP
#define SYMFLOW_OPS_ROUND_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>

#include "../expr/elementwise.hpp"
#include "packet_math.hpp"
#endif
// Outside the host-only part: rounding_op, the base, is also what NVRTC compiles (op_headers.hpp).
#include "floor.hpp"

namespace symflow {
namespace ops {
struct round_op : rounding_op<rounding_detail::current_mode> {
  static constexpr std::string_view name = "round";
  static constexpr std::string_view onnx_op = "Round";  // its ONNX form (expr/onnx_form.hpp)
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "round(x), elementwise: x rounded to the nearest integer, halfway cases to the even one (as ONNX "
      "Round, numpy.round and torch.round; not C's round, which rounds halves away from zero), as a "
      "value of x's dtype; f32 or f64. Exact (std::nearbyint in the default rounding mode; SIMD code "
      "rounds with one instruction, the same bits): round(0.5) = 0, round(1.5) = 2, round(-0.5) = -0, "
      "round(±Inf) = ±Inf, round(-0) = -0, NaN stays NaN, and values too large to have a fraction (|x| "
      ">= 2^23 in f32, 2^52 in f64) are unchanged, so round(1e30) = 1e30. Gradient: 0 (the derivative "
      "is 0 wherever it exists). Example: round(x) for x = [-1.5, -0.5, 0.5, 1.5, 2.5, 2.6] is [-2, -0, "
      "0, 2, 2, 3].";
#endif
  // Halves to even: std::nearbyint and the SIMD instructions both follow the current rounding mode,
  // round to nearest (ties to even) unless a program changes it (symflow never does). The NVRTC
  // prelude has no nearbyint (and std::round rounds halves away from zero), so generated device code
  // rounds by floor: d = x - floor(x) is exact where it decides (|x| >= 1, or d near 1/2), a half
  // goes to the even neighbour, and the sign of x is kept (round(-0.4) = -0); ±Inf and NaN pass.
  template <class T>
  SYMFLOW_HD static T apply(T x) {
#ifdef SYMFLOW_SCALAR_ONLY
    const T r = std::floor(x), d = x - r, half = r * T(0.5);
    const bool up = d > T(0.5) || (d == T(0.5) && std::floor(half) != half);
    return std::copysign(up ? r + T(1) : r, x);
#else
    return std::nearbyint(x);
#endif
  }
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <unary_operand X>
auto round(const X& x, source_site where = source_site::current()) {
  return make_unary<ops::round_op>(x, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_ROUND_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, round_op)
#endif
