#ifndef SYMFLOW_OPS_RESHAPE_AS_HPP
#define SYMFLOW_OPS_RESHAPE_AS_HPP
// reshape_as(x, like): x's elements with like's extents (torch.Tensor.reshape_as). reshape's
// gradient uses it where the operand's shape has several extents known only at run time (a
// [n, t, d] -> [n * t, d] flattening with n and t dyn), which no reshape target can spell.
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "../expr/derivative_rule.hpp"
#include "../expr/runtime_forms.hpp"
#include "../expr/structural.hpp"
#include "law_example.hpp"
#include "../expr/onnx_form.hpp"

namespace symflow {
namespace ops {

struct reshape_as_op {
  static constexpr std::string_view name = "reshape_as";
  // ONNX: Reshape(x, Shape(like)), a target extent 0 meaning 0.
  static void write_onnx(onnx_node_writer& w) {
    w.add("Reshape", {w.operand(0), w.add("Shape", {w.operand(1)})}, {{"allowzero", std::int64_t(1)}}, true);
  }
  static constexpr std::string_view doc =
      "reshape_as(x, like): x's elements, in row-major order, with like's extents "
      "(torch.Tensor.reshape_as); like's values are never read, so it may have any dtype. The element "
      "counts must be equal (a shape error otherwise). The result has x's dtype and values bit for "
      "bit (a copy, where reshape is a view). reshape's gradient uses it when the operand has more "
      "than one extent known only at run time. Gradient: reshape_as(g, x) for x, none for like. "
      "Example: reshape_as of x = [1, 2, 3, 4, 5, 6] and like of shape [3, 2] is [[1, 2], [3, 4], "
      "[5, 6]].";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<dyn, 6>>, law::floating<shape<dyn, 3, 2>>>;
    template <class T>
    static auto of(const auto& x0, const auto& x1) { return reshape_as(x0, x1); }
  };
  static constexpr bool contiguous_operands = true;
  template <class X, class L>
  using result_type = X;
  template <class X, class L>
  static constexpr bool accepts = true;  // dtype rule (ir/op_registry.hpp): like gives extents only
  template <std::size_t I>
  static constexpr bool reads_operand = I == 0;
  template <class SX, class SL>
  static constexpr bool shapes_ok = [] {
    if constexpr (SX::is_static && SL::is_static) {
      std::size_t a = 1, b = 1;
      for (auto e : SX::extents) a *= e;
      for (auto e : SL::extents) b *= e;
      return a == b;
    }
    return true;
  }();
  template <class SX, class SL>
  using result_shape = SL;

  static void check(const std::string& who, const runtime_extents& x, const runtime_extents& like) {
    if (element_count(x) != element_count(like))
      throw shape_error(who + ": cannot reshape " + format_extents(x) + " (" + std::to_string(element_count(x)) +
                        " elements) as " + format_extents(like) + " (" + std::to_string(element_count(like)) + ")");
  }
  template <std::size_t RX, std::size_t RL>
  static extents_t<RL> infer_extents(const auto& who, const extents_t<RX>& x, const extents_t<RL>& like) {
    check(who, runtime_extents(x.begin(), x.end()), runtime_extents(like.begin(), like.end()));
    return like;
  }
  template <class T, class Out, class X, class L>
  static void run_cpu(const Out& out, const X& x, const L&) {
    if (out.size()) std::memcpy(out.data(), x.data(), out.size() * sizeof(T));
  }
  // Runtime form (graph interpreter and builder). The counts are compared when the node runs, not
  // here: the graph builder infers types by putting one probe value in every unknown extent, which
  // says nothing of whether two unknown counts agree ([n * t] against [n, t, 4]).
  template <class Attrs>
  static runtime_extents runtime_extents_of(const Attrs&, const std::vector<runtime_extents>& in, const std::string&) {
    return in.at(1);
  }
  template <class Attrs>
  static void run_runtime(const Attrs&, const runtime_array& out, const std::vector<runtime_array>& in) {
    check(std::string(name), in.at(0).extents, out.extents);
    const std::size_t bytes = element_count(out.extents) * dtype_size(out.type);
    if (bytes) std::memcpy(out.data, in[0].data, bytes);
  }
  // Linear in x: the tangent is x's tangent with like's extents.
  template <class Y, class TX, class TL, class X, class L>
  static auto tangent(const Y&, const TX& tx, const TL&, const X&, const L& like) {
    if constexpr (is_no_gradient_v<TX>) return no_gradient{};
    else return make_kernel(reshape_as_op{}, source_site{}, tx, like);
  }
  // Derivative rule (expr/derivative_rule.hpp): the adjoint with x's extents; like gives extents only.
  static auto derivative(const auto&, const auto& g, const auto&, const auto& x, const auto&) {
    return tuple_of(apply_kernel(reshape_as_op{}, g, x), no_gradient{});
  }
};
}  // namespace ops

// x's elements with like's extents (like's values are not read).
template <expression X, expression Like>
auto reshape_as(const X& x, const Like& like, source_site where = source_site::current()) {
  return make_kernel(ops::reshape_as_op{}, where, x, like);
}
}  // namespace symflow
#endif  // SYMFLOW_OPS_RESHAPE_AS_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(kernel, reshape_as_op)
#endif
