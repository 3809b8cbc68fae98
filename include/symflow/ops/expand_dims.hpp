#ifndef SYMFLOW_OPS_EXPAND_DIMS_HPP
#define SYMFLOW_OPS_EXPAND_DIMS_HPP
#include <algorithm>
#include <optional>
#include <vector>
#include <bit>

#include "../expr/derivative_rule.hpp"
#include "../expr/reduction.hpp"
#include "../expr/structural.hpp"
#include "../expr/runtime_forms.hpp"
#include "sum.hpp"
#include "law_example.hpp"
#include "../expr/onnx_form.hpp"

namespace symflow {
namespace ops {

// Inserts axes of extent 1 at the result positions marked in Bits (bit i = result axis i): the
// inverse of a reduction without keepdims, so an adjoint broadcasts back over the reduced axes.
template <unsigned Bits>
struct expand_dims_op {
  static constexpr std::string_view name = "expand_dims";
  // ONNX Unsqueeze (axes as an input in opset 13 and later; positions in the result, as here).
  static void write_onnx(onnx_node_writer& w) {
    w.add("Unsqueeze", {w.operand(0), w.int64s(w.integers("axes"))}, {}, true);
  }
  // ONNX Unsqueeze: axes as an input from opset 13, an attribute before.
  static constexpr std::array<std::string_view, 1> onnx_reads{"Unsqueeze"};
  static void read_onnx(onnx_node_reader& r) {
    std::vector<std::int64_t> axes = r.has_input(1) ? r.constant_integers(1) : r.integers("axes", {});
    axes = r.axes(axes, r.rank_of(0) + axes.size());
    std::sort(axes.begin(), axes.end());
    if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) r.refuse("an axis is listed twice");
    r.result(r.apply(name, {r.input(0)}, {{"axes", axes}}));
  }
  static constexpr std::string_view doc =
      "expand_dims(x), attribute axes: inserts axes of extent 1 at the listed positions of the result "
      "(positions count in the result; in C++ the bits of expand_dims<Bits>(x), bit i for result axis "
      "i). A view: nothing is copied and values keep their bits; any dtype. It undoes a reduction "
      "without keepdims. Gradient: g summed over the inserted axes. Example: expand_dims with axes [1] "
      "of x = [1, 2, 3] (shape [3]) is [[1], [2], [3]] (shape [3, 1]).";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<dyn, 37>>>;
    template <class T>
    static auto of(const auto& x0) { return expand_dims<1u>(x0); }
  };
  static constexpr bool contiguous_operand = false;
  static constexpr std::size_t added = std::popcount(Bits);
  // Attributes for the graph value (graph/): the positions of the inserted unit axes.
  static constexpr auto axes_list = [] {
    std::array<std::size_t, std::popcount(Bits)> out{};
    for (std::size_t i = 0, j = 0; i < 32; ++i)
      if ((Bits >> i) & 1u) out[j++] = i;
    return out;
  }();
  template <class V>
  static constexpr void visit_attributes(V&& v) {
    v("axes", axes_list);
  }

  template <class S>
  static constexpr bool shapes_ok = (S::rank + added <= 8) && (Bits >> (S::rank + added)) == 0;
  template <class S>
  using result_shape = shape_from_array_t<[] {
    std::array<std::size_t, S::rank + added> out{};
    for (std::size_t i = 0, j = 0; i < out.size(); ++i) out[i] = ((Bits >> i) & 1u) ? 1 : S::extents[j++];
    return out;
  }()>;

  template <std::size_t R>
  static extents_t<R + added> infer_extents(const auto&, const extents_t<R>& in) {
    extents_t<R + added> out{};
    for (std::size_t i = 0, j = 0; i < out.size(); ++i) out[i] = ((Bits >> i) & 1u) ? 1 : in[j++];
    return out;
  }
  template <std::size_t R>
  static layout<R + added> apply(const layout<R>& in) {
    layout<R + added> out;
    for (std::size_t i = 0, j = 0; i < out.extents.size(); ++i) {
      if ((Bits >> i) & 1u) {
        out.extents[i] = 1;
        out.strides[i] = 0;
      } else {
        out.extents[i] = in.extents[j];
        out.strides[i] = in.strides[j++];
      }
    }
    out.offset = in.offset;
    return out;
  }
  // Runtime form (graph interpreter and builder): the inserted positions are values.
  template <class Attrs>
  static runtime_layout runtime_view(const Attrs& a, const runtime_layout& in, const std::string& who) {
    const auto axes = a.integers("axes");
    const std::size_t rank = in.extents.size() + axes.size();
    std::vector<bool> inserted(rank);
    for (auto ax : axes) {
      if (ax < 0 || std::size_t(ax) >= rank || inserted[std::size_t(ax)])
        throw shape_error(who + ": cannot insert axis " + std::to_string(ax) + " into an operand of shape " +
                          format_extents(in.extents));
      inserted[std::size_t(ax)] = true;
    }
    runtime_layout out{runtime_extents(rank), std::vector<std::size_t>(rank), in.offset};
    for (std::size_t i = 0, j = 0; i < rank; ++i) {
      out.extents[i] = inserted[i] ? 1 : in.extents[j];
      out.strides[i] = inserted[i] ? 0 : in.strides[j++];
    }
    return out;
  }
  // Derivative rule (expr/derivative_rule.hpp): the adjoint summed over the inserted axes.
  static auto derivative(const auto& self, const auto& g, const auto&, const auto&) {
    const auto inserted = integers<"axes">(self);
    return choose(
        lift([](const auto& axes) { return axes.size() == 0; }, inserted), [](const auto& g, const auto&) { return tuple_of(g); },
        [](const auto& g, const auto& axes) { return tuple_of(sum(g, axes)); }, g, inserted);
  }
};
}  // namespace ops

template <unsigned Bits, expression X>
auto expand_dims(const X& x, source_site where = source_site::current()) {
  return make_view(ops::expand_dims_op<Bits>{}, where, x);
}
// unsqueeze<Axis>(x): an axis of extent 1 at position Axis of the result (negative: from the last
// of the result's axes), as numpy.expand_dims and torch.unsqueeze.
template <int Axis, expression X>
auto unsqueeze(const X& x, source_site where = source_site::current()) {
  constexpr int rank = int(shape_of<X>::rank) + 1;
  static_assert(Axis >= -rank && Axis < rank, "symflow: unsqueeze: the axis is outside the result's rank");
  if constexpr (Axis >= -rank && Axis < rank)
    return expand_dims<1u << unsigned(Axis < 0 ? Axis + rank : Axis)>(x, where);
}
}  // namespace symflow
#endif  // SYMFLOW_OPS_EXPAND_DIMS_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(view, expand_dims_op<1u>)
#endif
