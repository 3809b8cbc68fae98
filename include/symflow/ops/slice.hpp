#ifndef SYMFLOW_OPS_SLICE_HPP
#define SYMFLOW_OPS_SLICE_HPP
#include <algorithm>
#include <limits>
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include "../expr/derivative_rule.hpp"
#include "../expr/structural.hpp"
#include "../expr/runtime_forms.hpp"
#include "flip.hpp"
#include "law_example.hpp"
#include "../expr/onnx_form.hpp"

namespace symflow {
namespace ops {

template <std::size_t Axis>
struct scatter_op;  // slice's adjoint (scatter.hpp)

// The index rules slice and its adjoint scatter share.
namespace slice_detail {
constexpr std::size_t count(std::size_t begin, std::size_t end, std::size_t step) {
  return begin >= end ? 0 : (end - begin - 1) / step + 1;
}
inline void check(const std::string& who, std::size_t axis, std::size_t begin, std::size_t end, std::size_t step,
                  const std::size_t* extents, std::size_t rank) {
  if (step == 0)
    throw shape_error(who + ": a slice's step must be at least 1 (along axis " + std::to_string(axis) + ")");
  if (begin > end || axis >= rank || end > extents[axis])
    throw shape_error(who + ": [" + std::to_string(begin) + ", " + std::to_string(end) + ") along axis " +
                      std::to_string(axis) + " is outside an operand of shape " +
                      format_extents(std::vector<std::size_t>(extents, extents + rank)));
}
struct range {
  std::size_t begin, end, step;
};
// begin, end and step of a graph node, checked against the extents of the sliced operand; "step" is
// 1 when the node has none (files written before steps existed).
template <class Attrs>
range runtime_range(const std::string& who, const Attrs& a, std::size_t axis, const runtime_extents& extents) {
  const std::int64_t b = a.integer("begin"), e = a.integer("end"), s = a.has("step") ? a.integer("step") : 1;
  if (b < 0 || e < 0 || s < 1)
    throw shape_error(who + ": begin " + std::to_string(b) + ", end " + std::to_string(e) + ", step " +
                      std::to_string(s) + ": begin and end must be >= 0 and step >= 1");
  check(who, axis, std::size_t(b), std::size_t(e), std::size_t(s), extents.data(), extents.size());
  return {std::size_t(b), std::size_t(e), std::size_t(s)};
}
}  // namespace slice_detail

// Indices [begin, end) along one axis (rows of a dataset for axis 0): an offset into the operand.
template <std::size_t Axis>
struct slice_op {
  static constexpr std::string_view name = "slice";
  // ONNX Slice over one axis (starts, ends, axes and steps as inputs).
  static void write_onnx(onnx_node_writer& w) {
    const std::int64_t step = w.has("step") ? w.integer("step") : 1;
    w.add("Slice", {w.operand(0), w.int64s({w.integer("begin")}), w.int64s({w.integer("end")}),
                    w.int64s({w.integer("axis")}), w.int64s({step})}, {}, true);
  }
  // ONNX Slice (starts, ends, axes, steps as inputs; attributes before opset 10): one slice per listed
  // axis, a negative step a flip and then a slice. Indices are clamped as ONNX clamps them.
  static constexpr std::array<std::string_view, 1> onnx_reads{"Slice"};
  static void read_onnx(onnx_node_reader& r) {
    const bool inputs = r.opset() >= 10;
    const auto list = [&](std::size_t i, std::string_view attribute) {
      return inputs ? (r.has_input(i) ? r.constant_integers(i) : std::vector<std::int64_t>{})
                    : r.integers(attribute, {});
    };
    const std::vector<std::int64_t> starts = list(1, "starts"), ends = list(2, "ends");
    std::vector<std::int64_t> axes = list(3, "axes"), steps = inputs ? list(4, "") : std::vector<std::int64_t>{};
    const std::vector<std::int64_t> extents = r.extents_of(r.input(0));
    if (axes.empty())
      for (std::size_t a = 0; a < starts.size(); ++a) axes.push_back(std::int64_t(a));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
      r.refuse("starts, ends, axes and steps differ in length");
    onnx_node_reader::value y = r.input(0);
    for (std::size_t k = 0; k < starts.size(); ++k) {
      const std::int64_t axis = r.axis(axes[k], extents.size()), d = extents[axis], step = steps[k];
      if (step == 0) r.refuse("a step of 0");
      if (d < 0) {
        // Over an extent known only at run time, what needs no extent: the whole axis (0 to an
        // end past any extent) and its reversal (from the last, -1 or past any extent, to before
        // the first; flip's form).
        constexpr std::int64_t far = std::int64_t(1) << 62;
        if (step == 1 && starts[k] == 0 && ends[k] >= far) continue;
        if (step == -1 && (starts[k] == -1 || starts[k] >= far) && ends[k] <= -far) {
          y = r.apply(flip_op<0>::name, {y}, {{"axis", axis}});
          continue;
        }
        r.refuse("Slice of an axis whose extent is not known, other than the whole axis or its reversal");
      }
      const auto from_end = [d](std::int64_t i) { return i < 0 ? i + d : i; };
      std::int64_t begin = from_end(starts[k]), end = from_end(ends[k]);
      if (step > 0) {
        begin = std::clamp<std::int64_t>(begin, 0, d), end = std::clamp<std::int64_t>(end, 0, d);
      } else {  // flipped: index i is d - 1 - i
        begin = d - 1 - std::clamp<std::int64_t>(begin, -1, d - 1), end = d - 1 - std::clamp<std::int64_t>(end, -1, d - 1);
        y = r.apply(flip_op<0>::name, {y}, {{"axis", axis}});
      }
      end = std::max(begin, end);
      const std::int64_t stride = step > 0 ? step : (step == std::numeric_limits<std::int64_t>::min() ? d + 1 : -step);
      y = r.apply(name, {y}, {{"axis", axis}, {"begin", begin}, {"end", end}, {"step", std::max<std::int64_t>(stride, 1)}});
    }
    r.result(y);
  }
  static constexpr std::string_view doc =
      "slice(x), attributes axis, begin, end and step (>= 1, default 1): indices begin, begin + step, "
      "... below end of one axis, and all of the others; 0 <= begin <= end <= the axis's extent and "
      "step >= 1 (a shape error otherwise; begin == end gives an empty result). The result's extent "
      "along axis is ceil((end - begin) / step). A view (an offset and a stride into the operand): "
      "nothing is copied and values keep their bits; any dtype. In C++ slice(x, begin, end) cuts axis 0 "
      "and narrow<Axis>(x, begin, end, step) any axis (negative: from the last); flip<Axis>(x) "
      "reverses one, so a negative step is a flip then a slice. Gradient: scatter with the same "
      "attributes, g placed at those indices in zeros of the operand's shape. Example: slice with axis "
      "0, begin 1, end 4, step 2 of x = [10, 20, 30, 40, 50] is [20, 40].";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<dyn, 37>>>;
    template <class T>
    static auto of(const auto& x0) { return narrow<1>(x0, 4, 30, 3); }
  };
  static constexpr bool contiguous_operand = false;
  std::size_t begin = 0, end = 0, step = 1;
  bool operator==(const slice_op&) const = default;
  // Graph files written before steps existed have no "step": it is 1 there.
  static constexpr std::array<std::string_view, 1> optional_attributes{"step"};
  // Attributes for the graph value (graph/): visited in this order, under these keys.
  template <class V>
  void visit_attributes(V&& v) const {
    v("axis", Axis);
    v("begin", begin);
    v("end", end);
    v("step", step);
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
    slice_detail::check(who, Axis, begin, end, step, in.data(), R);
    extents_t<R> out = in;
    out[Axis] = slice_detail::count(begin, end, step);
    return out;
  }
  template <std::size_t R>
  layout<R> apply(const layout<R>& in) const {
    layout<R> out = in;
    out.extents[Axis] = slice_detail::count(begin, end, step);
    out.offset = in.offset + begin * in.strides[Axis];
    out.strides[Axis] = in.strides[Axis] * step;
    return out;
  }
  // Runtime form (graph interpreter and builder): the axis is a value.
  template <class Attrs>
  static runtime_layout runtime_view(const Attrs& a, runtime_layout in, const std::string& who) {
    const std::size_t axis = runtime_axis(who, a.integer("axis"), in.extents.size());
    const auto [b, e, s] = slice_detail::runtime_range(who, a, axis, in.extents);
    in.offset += b * in.strides[axis];
    in.strides[axis] *= s;
    in.extents[axis] = slice_detail::count(b, e, s);
    return in;
  }
  // Printouts show the range (expr/to_string.hpp): two slices of one tensor are told apart.
  static constexpr bool prints_attributes = true;
  // The attributes held as members, for an op of the same family (expr/derivative_rule.hpp).
  constexpr auto members() const { return std::tuple{begin, end, step}; }
  // Derivative rule (expr/derivative_rule.hpp): the adjoint scattered into zeros shaped like x.
  static auto derivative(const auto& self, const auto& g, const auto&, const auto& x) {
    return tuple_of(apply_kernel(sibling<scatter_op>(self), g, x));
  }
};
}  // namespace ops

// Rows [begin, end) of axis 0. (No step here: slice(h, axis, begin, end) on graph handles names the
// axis first, so a fourth number would read differently on the two; narrow takes a step.)
template <expression X>
auto slice(const X& x, std::size_t begin, std::size_t end, source_site where = source_site::current()) {
  return make_view(ops::slice_op<0>{begin, end, 1}, where, x);
}
// Indices [begin, end) of an axis given as a rule's attribute value (expr/derivative_rule.hpp).
template <expression X, auto Axis>
auto slice(const X& x, fixed<Axis>, std::size_t begin, std::size_t end, std::size_t step = 1) {
  return make_view(ops::slice_op<std::size_t(Axis)>{begin, end, step}, source_site{}, x);
}
// Indices begin, begin + step, ... below end of any axis (negative: from the last).
template <int Axis, expression X>
auto narrow(const X& x, std::size_t begin, std::size_t end, std::size_t step = 1,
            source_site where = source_site::current()) {
  constexpr int rank = int(shape_of<X>::rank);
  static_assert(Axis >= -rank && Axis < rank, "symflow: narrow: the axis is outside the operand's rank");
  if constexpr (Axis >= -rank && Axis < rank)
    return make_view(ops::slice_op<std::size_t(Axis < 0 ? Axis + rank : Axis)>{begin, end, step}, where, x);
}
}  // namespace symflow
#endif  // SYMFLOW_OPS_SLICE_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(view, slice_op<0>)
#endif
