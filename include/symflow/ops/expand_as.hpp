#ifndef SYMFLOW_OPS_EXPAND_AS_HPP
#define SYMFLOW_OPS_EXPAND_AS_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include "../expr/elementwise.hpp"
#include "../expr/onnx_form.hpp"
#endif

namespace symflow {
namespace ops {

// expand_as(a, like): a broadcast to the shape of `like`, whose values are never read (the
// evaluator does not even compute them). Gradients use it to give a result its leaf's shape.
struct expand_as_op {
  static constexpr std::string_view name = "expand_as";
#ifndef SYMFLOW_SCALAR_ONLY
  // ONNX: Expand(a, Shape(like)).
  static void write_onnx(onnx_node_writer& w) {
    w.add("Expand", {w.operand(0), w.add("Shape", {w.operand(1)})}, {}, true);
  }
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "expand_as(a, like): a broadcast (NumPy rules: right-aligned, an extent of 1 stretches) to the "
      "shape of like, whose values are never read or even computed, so like may have any dtype. The "
      "result has a's dtype and a's values bit for bit (NaN payloads, -0); its shape is the broadcast "
      "of both shapes, which is like's shape when a broadcasts to it. Gradients use it to give a value "
      "its leaf's shape. Gradient: g summed back to a's shape, none for like. Example: expand_as(a, "
      "like) for a = [1, 2] and like of shape [2, 2] is [[1, 2], [1, 2]].";
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  template <class A, class B>
  using result_type = A;
  template <class A, class B>
  static constexpr bool accepts = true;
  template <std::size_t I>
  static constexpr bool reads_operand = I == 0;
#endif
  template <class T, class U>
  SYMFLOW_HD static T apply(T a, U) {
    return a;
  }
#ifndef SYMFLOW_SCALAR_ONLY
  template <class P>
  static P packet(const P& a, const P&) {
    return a;
  }
  template <class Y, class TA, class TB, class A, class B>
  static auto tangent(const Y&, const TA& ta, const TB&, const A&, const B& b) {
    return expand_as(ta, b);
  }
  template <class G, class Y, class A, class B>
  static auto gradient(const G& g, const Y&, const A&, const B&) {
    return tuple_of(sum_to<shape_of<A>>(g), no_gradient{});
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <unary_operand A, unary_operand B>
auto expand_as(const A& a, const B& like, source_site where = source_site::current()) {
  if constexpr (value_handle<A>) return apply_value(ops::expand_as_op{}, a, like);
  else return make_elementwise(ops::expand_as_op{}, where, a, like);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_EXPAND_AS_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, expand_as_op)
#endif
