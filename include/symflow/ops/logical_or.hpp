#ifndef SYMFLOW_OPS_LOGICAL_OR_HPP
#define SYMFLOW_OPS_LOGICAL_OR_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <type_traits>

#include "../expr/elementwise.hpp"
#include "packet_math.hpp"
#endif

namespace symflow {
namespace ops {
struct logical_or_op : mask_result {
  static constexpr std::string_view name = "logical_or";
  static constexpr std::string_view onnx_op = "Or";  // its ONNX form (expr/onnx_form.hpp)
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "logical_or(a, b): a || b elementwise, as a bool mask. a and b are bool (as ONNX Or; "
      "torch.logical_or and numpy.logical_or also take numbers, here compare with 0 first) and "
      "broadcast (NumPy rules: right-aligned, an extent of 1 stretches); in C++ one of them may be a "
      "plain bool. No gradient: the operands are bool. Example: logical_or([true, true, false, "
      "false], [true, false, true, false]) is [true, true, true, false].";
  // bool and bool in, bool out.
  template <class T, class... Rest>
  static constexpr bool accepts = std::is_same_v<T, bool> && (std::is_same_v<Rest, bool> && ...);
#endif
  template <class T>
  SYMFLOW_HD static bool apply(T a, T b) {
    return a || b;
  }
#ifndef SYMFLOW_SCALAR_ONLY
  // On lane masks (a comparison's mask_packet): the mask of the result.
  template <class P>
  static P mask_of_masks(const P& a, const P& b) {
    namespace pm = simd::pm;
    return pm::por(a, b);
  }
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  // Derivative rule: adjoints of (a, b) given the upstream adjoint g and this node's value y.
  template <class G, class Y, class A, class B>
  static auto gradient(const G&, const Y&, const A&, const B&) {
    return tuple_of(no_gradient{}, no_gradient{});
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <class A, class B>
  requires binary_operands<A, B>
auto logical_or(const A& a, const B& b, source_site where = source_site::current()) {
  return make_binary<ops::logical_or_op>(a, b, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_LOGICAL_OR_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, logical_or_op)
#endif
