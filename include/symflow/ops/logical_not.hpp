#ifndef SYMFLOW_OPS_LOGICAL_NOT_HPP
#define SYMFLOW_OPS_LOGICAL_NOT_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <type_traits>

#include "../expr/elementwise.hpp"
#include "packet_math.hpp"
#endif

namespace symflow {
namespace ops {
struct logical_not_op : mask_result {
  static constexpr std::string_view name = "logical_not";
  static constexpr std::string_view onnx_op = "Not";  // its ONNX form (expr/onnx_form.hpp)
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "logical_not(x): !x elementwise, as a bool mask; x is bool (as ONNX Not; torch.logical_not and "
      "numpy.logical_not also take numbers, here compare with 0 first: not_equal(x, 0)). No gradient: "
      "the operand is bool. Example: logical_not([true, false]) is [false, true].";
  // bool in, bool out.
  template <class T, class... Rest>
  static constexpr bool accepts = std::is_same_v<T, bool> && sizeof...(Rest) == 0;
#endif
  template <class T>
  SYMFLOW_HD static bool apply(T x) {
    return !x;
  }
#ifndef SYMFLOW_SCALAR_ONLY
  // On lane masks (a comparison's mask_packet): the mask of the result.
  template <class P>
  static P mask_of_masks(const P& a) {
    namespace pm = simd::pm;
    return pm::pandnot(pm::ptrue(a), a);
  }
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  // Derivative rule: adjoint of the operand given the upstream adjoint g and this node's value y.
  template <class G, class Y, class X>
  static auto gradient(const G&, const Y&, const X&) {
    return tuple_of(no_gradient{});
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <unary_operand X>
auto logical_not(const X& x, source_site where = source_site::current()) {
  return make_unary<ops::logical_not_op>(x, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_LOGICAL_NOT_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, logical_not_op)
#endif
