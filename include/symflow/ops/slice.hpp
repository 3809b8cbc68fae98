#ifndef SYMFLOW_OPS_SLICE_HPP
#define SYMFLOW_OPS_SLICE_HPP
#include <optional>
#include <vector>
#include "../expr/derivative_rule.hpp"
#include "../expr/structural.hpp"
#include "../expr/runtime_forms.hpp"
#include "law_example.hpp"

namespace symflow {
namespace ops {

template <std::size_t Axis>
struct scatter_op;  // slice's adjoint (scatter.hpp)

// Indices [begin, end) along one axis (rows of a dataset for axis 0): an offset into the operand.
template <std::size_t Axis>
struct slice_op {
  static constexpr std::string_view name = "slice";
  static constexpr std::string_view doc =
      "slice(x), attributes axis, begin and end: indices [begin, end) of one axis and all of the "
      "others; 0 <= begin <= end <= the axis's extent (a shape error otherwise; begin == end gives an "
      "empty result). A view (an offset into the operand): nothing is copied and values keep their "
      "bits; any dtype. In C++ slice(x, begin, end) cuts axis 0 and narrow<Axis>(x, begin, end) any "
      "axis. Gradient: scatter, g placed at [begin, end) in zeros of the operand's shape. Example: "
      "slice with axis 0, begin 1, end 3 of x = [10, 20, 30, 40] is [20, 30].";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<dyn, 37>>>;
    template <class T>
    static auto of(const auto& x0) { return narrow<1>(x0, 4, 30); }
  };
  static constexpr bool contiguous_operand = false;
  std::size_t begin = 0, end = 0;
  bool operator==(const slice_op&) const = default;
  // Attributes for the graph value (graph/): visited in this order, under these keys.
  template <class V>
  void visit_attributes(V&& v) const {
    v("axis", Axis);
    v("begin", begin);
    v("end", end);
  }

  template <class S>
  static constexpr bool shapes_ok = Axis < S::rank;
  template <class S>
  using result_shape = shape_from_array_t<[] {
    auto e = S::extents;
    e[Axis] = dyn;
    return e;
  }()>;

  template <std::size_t R>
  extents_t<R> infer_extents(const auto& who, const extents_t<R>& in) const {
    if (begin > end || end > in[Axis])
      throw shape_error(who + ": [" + std::to_string(begin) + ", " + std::to_string(end) + ") along axis " +
                        std::to_string(Axis) + " is outside an operand of shape " + format_extents(in));
    extents_t<R> out = in;
    out[Axis] = end - begin;
    return out;
  }
  template <std::size_t R>
  layout<R> apply(const layout<R>& in) const {
    layout<R> out = in;
    out.extents[Axis] = end - begin;
    out.offset = in.offset + begin * in.strides[Axis];
    return out;
  }
  // Runtime form (graph interpreter and builder): the axis is a value.
  template <class Attrs>
  static runtime_layout runtime_view(const Attrs& a, runtime_layout in, const std::string& who) {
    const std::size_t axis = runtime_axis(who, a.integer("axis"), in.extents.size());
    const std::int64_t b = a.integer("begin"), e = a.integer("end");
    if (b < 0 || b > e || std::size_t(e) > in.extents[axis])
      throw shape_error(who + ": [" + std::to_string(b) + ", " + std::to_string(e) + ") along axis " +
                        std::to_string(axis) + " is outside an operand of shape " + format_extents(in.extents));
    in.offset += std::size_t(b) * in.strides[axis];
    in.extents[axis] = std::size_t(e - b);
    return in;
  }
  std::string attributes() const {
    return "axis=" + std::to_string(Axis) + ", begin=" + std::to_string(begin) + ", end=" + std::to_string(end);
  }
  // The attributes held as members, for an op of the same family (expr/derivative_rule.hpp).
  constexpr auto members() const { return std::tuple{begin, end}; }
  // Derivative rule (expr/derivative_rule.hpp): the adjoint scattered into zeros shaped like x.
  static auto derivative(const auto& self, const auto& g, const auto&, const auto& x) {
    return tuple_of(apply_kernel(sibling<scatter_op>(self), g, x));
  }
};
}  // namespace ops

// Rows [begin, end) of axis 0.
template <expression X>
auto slice(const X& x, std::size_t begin, std::size_t end,
           source_site where = source_site::current()) {
  return make_view(ops::slice_op<0>{begin, end}, where, x);
}
// Indices [begin, end) of an axis given as a rule's attribute value (expr/derivative_rule.hpp).
template <expression X, auto Axis>
auto slice(const X& x, fixed<Axis>, std::size_t begin, std::size_t end) {
  return make_view(ops::slice_op<std::size_t(Axis)>{begin, end}, source_site{}, x);
}
// Indices [begin, end) of any axis (negative: from the last).
template <int Axis, expression X>
auto narrow(const X& x, std::size_t begin, std::size_t end,
            source_site where = source_site::current()) {
  constexpr int rank = int(shape_of<X>::rank);
  static_assert(Axis >= -rank && Axis < rank, "symflow: narrow: the axis is outside the operand's rank");
  if constexpr (Axis >= -rank && Axis < rank)
    return make_view(ops::slice_op<std::size_t(Axis < 0 ? Axis + rank : Axis)>{begin, end}, where, x);
}
}  // namespace symflow
#endif  // SYMFLOW_OPS_SLICE_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(view, slice_op<0>)
#endif
