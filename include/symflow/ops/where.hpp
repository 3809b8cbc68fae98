#ifndef SYMFLOW_OPS_WHERE_HPP
#define SYMFLOW_OPS_WHERE_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include "../expr/elementwise.hpp"
#include "../expr/rewrite.hpp"
#include "packet_math.hpp"
#endif

namespace symflow {
namespace ops {
// Selects an operand's value with its bits (NaN payloads and -0 included); a NaN in the branch not
// taken does not propagate. Its packet form (select_packet) takes the mask as lanes, which a fused loop
// has where the mask is a comparison of floating operands (eval/cpu/node_evaluators.hpp).
struct where_op {
  static constexpr std::string_view name = "where";
  static constexpr std::string_view onnx_op = "Where";  // its ONNX form (expr/onnx_form.hpp)
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "where(mask, a, b): elementwise selection, a where mask is true and b elsewhere. mask is bool, a "
      "and b have one dtype (any), which the result has; the three operands broadcast (NumPy rules), "
      "and in C++ either branch may be a plain number. The chosen value is copied bit for bit (NaN "
      "payloads, -0), and a NaN or Inf in the branch not taken does not reach the result. Gradient: g "
      "where mask is true for a, g where it is false for b (0 elsewhere, also selected, so a NaN in g "
      "does not leak into the other branch), none for the mask. Example: where([true, false, true], "
      "[1, 2, 3], [-1, -2, -3]) is [1, -2, 3].";
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  template <class M, class T, class U>
  using result_type = T;
  template <class M, class T, class U>
  static constexpr bool accepts = std::is_same_v<M, bool> && std::is_same_v<T, U>;
#endif
  template <class T>
  SYMFLOW_HD static T apply(bool mask, T a, T b) {
    return mask ? a : b;
  }
#ifndef SYMFLOW_SCALAR_ONLY
  // On packets, with the mask as lanes of all-ones or zero bits (a comparison's mask_packet): each
  // lane's bits from a or b, as the scalar form copies them.
  template <class P>
  static P select_packet(const P& mask, const P& a, const P& b) {
    return simd::pm::pselect(mask, a, b);
  }
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  // where(m, 0, 0) -> 0.
  template <class M, class A, class B>
  static auto simplify(const M&, const A& a, const B&) {
    if constexpr (is_zero_v<A> && is_zero_v<B>) return a;
    else return no_rewrite{};
  }
  // The gradient flows only through the branch that was chosen.
  template <class G, class Y, class M, class A, class B>
  static auto gradient(const G& g, const Y&, const M& mask, const A&, const B&) {
    using T = value_type_of<G>;
    return tuple_of(no_gradient{}, where(mask, g, zero<T>{}), where(mask, zero<T>{}, g));
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

// where(mask, a, b): a where mask is true, else b. Either branch may be a plain scalar.
template <unary_operand M, class A, class B>
  requires((operand<A> || value_handle<A>) && (operand<B> || value_handle<B>))
auto where(const M& mask, const A& a, const B& b, source_site at = source_site::current()) {
  if constexpr (value_handle<M>)
    return apply_value(ops::where_op{}, mask, a, b);
  else if constexpr (expression<A>)
    return make_elementwise(ops::where_op{}, at, mask, a, as_expression<value_type_of<A>>(b));
  else if constexpr (expression<B>)
    return make_elementwise(ops::where_op{}, at, mask, as_expression<value_type_of<B>>(a), b);
  else
    static_assert(expression<A> || expression<B>, "symflow: where needs at least one expression branch");
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_WHERE_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, where_op)
#endif
