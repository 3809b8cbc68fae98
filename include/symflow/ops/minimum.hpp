#ifndef SYMFLOW_OPS_MINIMUM_HPP
#define SYMFLOW_OPS_MINIMUM_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>
#include <limits>

#include "../expr/elementwise.hpp"
#include "packet_math.hpp"
#include "../expr/onnx_form.hpp"
#endif

namespace symflow {
namespace ops {
// IEEE 754-2019 minimum, as NumPy's and PyTorch's minimum: a NaN operand gives NaN (the first
// operand's when both are), and -0 < +0 (minimum(-0, +0) = -0 in either order). The packet and the
// scalar form agree bit for bit (Eigen's pmin would return the second operand for a NaN in a packet).
struct minimum_op : same_dtype_result {
  static constexpr std::string_view name = "minimum";
  static constexpr std::string_view onnx_op = "Min";  // its ONNX form (expr/onnx_form.hpp)
#ifndef SYMFLOW_SCALAR_ONLY
  // ONNX Min takes any number of operands.
  static constexpr std::array<std::string_view, 1> onnx_reads{"Min"};
  static void read_onnx(onnx_node_reader& r) {
    onnx_node_reader::value y = r.input(0);
    for (std::size_t i = 1; i < r.input_count(); ++i) y = r.apply(name, {y, r.input(i)});
    r.result(y);
  }
  static constexpr std::string_view doc =
      "minimum(a, b): the smaller of a and b, elementwise. a and b have one dtype and broadcast (NumPy "
      "rules: right-aligned, an extent of 1 stretches); in C++ one of them may be a plain number. Any "
      "dtype. IEEE 754-2019 minimum: a NaN operand gives NaN (a's NaN when both are; NaN propagates as "
      "in NumPy's minimum), and -0 < +0, so minimum(-0, +0) = -0 in either order; SIMD and scalar "
      "forms agree bit for bit; for bool it is a logical and. Gradient: g to the smaller operand, g / "
      "2 to each at a tie (a == b), nothing to either where one is NaN. Example: minimum([1, -0, NaN], "
      "[2, 0, 3]) is [1, -0, NaN].";
#endif
  template <class T>
  SYMFLOW_HD static T apply(T a, T b) {
    if constexpr (std::numeric_limits<T>::has_infinity) {
      if (a != a) return a;
      if (b != b) return b;
      if (a == b) return std::copysign(T(1), a) < T(0) ? a : b;  // equal: only ±0 differ
    }
    return b < a ? b : a;
  }
#ifndef SYMFLOW_SCALAR_ONLY
  template <class P>
  static P packet(const P& a, const P& b) {
    namespace pm = simd::pm;
    P m = pm::pselect(pm::pcmp_lt(b, a), b, a);
    m = pm::pselect(pm::pcmp_eq(a, b), pm::por(a, b), m);  // of ±0 the sign bit if either has it
    m = pm::pselect(simd::nan_lanes(b), b, m);
    return pm::pselect(simd::nan_lanes(a), a, m);
  }
  // Derivative rule: adjoints of (a, b) given the upstream adjoint g and this node's value y.
  template <class G, class Y, class A, class B>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const A& a,
                       [[maybe_unused]] const B& b) {
    // Ties split the adjoint evenly (g/2 each), as JAX and PyTorch do; where either is NaN, neither gets any.
    using T = value_type_of<G>;
    const auto half = g * T(0.5);
    return tuple_of(where(a < b, g, where(equal(a, b), half, zero<T>{})),
                    where(b < a, g, where(equal(a, b), half, zero<T>{})));
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <class A, class B>
  requires binary_operands<A, B>
auto minimum(const A& a, const B& b, source_site where = source_site::current()) {
  return make_binary<ops::minimum_op>(a, b, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_MINIMUM_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, minimum_op)
#endif
