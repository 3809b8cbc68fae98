#ifndef SYMFLOW_OPS_SCATTER_HPP
#define SYMFLOW_OPS_SCATTER_HPP
#include <optional>
#include <vector>
#include <algorithm>
#include <cstring>

#include "../expr/derivative_rule.hpp"
#include "../expr/structural.hpp"
#include "../expr/runtime_forms.hpp"
#include "slice.hpp"
#include "law_example.hpp"

namespace symflow {
namespace ops {

// scatter<Axis>(part, like, begin, end): a tensor shaped like `like` (whose values are not read),
// zero except indices [begin, end) along Axis, which hold `part`. The adjoint of slice and concat.
template <std::size_t Axis>
struct scatter_op {
  static constexpr std::string_view name = "scatter";
  static constexpr std::string_view doc =
      "scatter(part, like), attributes axis, begin and end: a tensor of like's shape that is zero "
      "except at indices [begin, end) along axis, which hold part. Only like's extents are used: its "
      "values are never read. part must have like's rank and extents except along axis, where its "
      "extent is end - begin, with end <= like's extent (a shape error otherwise). The result has "
      "part's dtype (any dtype; the zeros are +0, false for bool), and part's values keep their bits. "
      "It is the adjoint of slice and of concat. Gradient: the slice [begin, end) of g for part, none "
      "for like. Example: scatter with axis 0, begin 1, end 3 of part = [7, 8] into like of shape [4] "
      "is [0, 7, 8, 0].";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<dyn, 5>>, law::floating<shape<dyn, 9>>>;
    template <class T>
    static auto of(const auto& x0, const auto& x1) { return scatter<1>(x0, x1, 2, 7); }
  };
  static constexpr bool contiguous_operands = true;
  std::size_t begin = 0, end = 0;
  bool operator==(const scatter_op&) const = default;
  // Attributes for the graph value (graph/): visited in this order, under these keys.
  template <class V>
  void visit_attributes(V&& v) const {
    v("axis", Axis);
    v("begin", begin);
    v("end", end);
  }
  template <class A, class B>
  using result_type = A;
  template <class A, class B>
  static constexpr bool accepts = true;  // dtype rule (ir/op_registry.hpp): like gives extents only
  template <std::size_t I>
  static constexpr bool reads_operand = I == 0;
  template <class SA, class SB>
  static constexpr bool shapes_ok = SA::rank == SB::rank && Axis < SA::rank;
  template <class SA, class SB>
  using result_shape = SB;

  template <std::size_t R>
  extents_t<R> infer_extents(const auto& who, const extents_t<R>& part, const extents_t<R>& like) const {
    bool ok = end <= like[Axis] && part[Axis] == end - begin;
    for (std::size_t i = 0; i < R; ++i) ok = ok && (i == Axis || part[i] == like[i]);
    if (!ok)
      throw shape_error(who + ": " + format_extents(part) + " at [" + std::to_string(begin) + ", " +
                        std::to_string(end) + ") along axis " + std::to_string(Axis) + " does not fit in " +
                        format_extents(like));
    return like;
  }
  template <class T, class Out, class A, class B>
  void run_cpu(const Out& out, const A& part, const B&) const {
    std::fill_n(out.data(), out.size(), T(0));
    std::size_t outer = 1, inner = 1;
    for (std::size_t i = 0; i < Axis; ++i) outer *= out.extent(i);
    for (std::size_t i = Axis + 1; i < Out::rank; ++i) inner *= out.extent(i);
    const std::size_t block = (end - begin) * inner, out_row = out.extent(Axis) * inner;
    for (std::size_t o = 0; o < outer && block; ++o)
      std::memcpy(out.data() + o * out_row + begin * inner, part.data() + o * block, block * sizeof(T));
  }
  // Runtime form (graph interpreter and builder): the axis is a value.
  template <class Attrs>
  static runtime_extents runtime_extents_of(const Attrs& a, const std::vector<runtime_extents>& in, const std::string& who) {
    const auto& part = in.at(0);
    const auto& like = in.at(1);
    const std::size_t axis = runtime_axis(who, a.integer("axis"), like.size());
    const std::int64_t b = a.integer("begin"), e = a.integer("end");
    bool ok = part.size() == like.size() && b >= 0 && b <= e && std::size_t(e) <= like[axis] &&
              part[axis] == std::size_t(e - b);
    for (std::size_t i = 0; ok && i < like.size(); ++i) ok = i == axis || part[i] == like[i];
    if (!ok)
      throw shape_error(who + ": " + format_extents(part) + " at [" + std::to_string(b) + ", " + std::to_string(e) +
                        ") along axis " + std::to_string(axis) + " does not fit in " + format_extents(like));
    return like;
  }
  template <class Attrs>
  static void run_runtime(const Attrs& a, const runtime_array& out, const std::vector<runtime_array>& in) {
    const std::size_t axis = std::size_t(a.integer("axis")), b = std::size_t(a.integer("begin")),
                      e = std::size_t(a.integer("end")), size = dtype_size(out.type);
    std::memset(out.data, 0, element_count(out.extents) * size);
    std::size_t outer = 1, inner = size;
    for (std::size_t i = 0; i < axis; ++i) outer *= out.extents[i];
    for (std::size_t i = axis + 1; i < out.extents.size(); ++i) inner *= out.extents[i];
    const std::size_t block = (e - b) * inner, out_row = out.extents[axis] * inner;
    for (std::size_t o = 0; o < outer && block; ++o)
      std::memcpy(static_cast<char*>(out.data) + o * out_row + b * inner, static_cast<const char*>(in[0].data) + o * block, block);
  }
  std::string attributes() const {
    return "axis=" + std::to_string(Axis) + ", begin=" + std::to_string(begin) + ", end=" + std::to_string(end);
  }
  template <class Y, class TA, class TB, class A, class B>
  auto tangent(const Y&, const TA& ta, const TB&, const A&, const B& like) const {
    if constexpr (is_no_gradient_v<TA>) return no_gradient{};
    else return scatter<Axis>(ta, like, begin, end);
  }
  // The attributes held as members, for an op of the same family (expr/derivative_rule.hpp).
  constexpr auto members() const { return std::tuple{begin, end}; }
  // Derivative rule (expr/derivative_rule.hpp): the part's adjoint is the slice it was put in.
  static auto derivative(const auto& self, const auto& g, const auto&, const auto&, const auto&) {
    return tuple_of(apply_view(sibling<slice_op>(self), g), no_gradient{});
  }
};
}  // namespace ops

template <std::size_t Axis, expression Part, expression Like>
auto scatter(const Part& part, const Like& like, std::size_t begin, std::size_t end) {
  return make_kernel(ops::scatter_op<Axis>{begin, end}, source_site{}, part, like);
}
}  // namespace symflow
#endif  // SYMFLOW_OPS_SCATTER_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(kernel, scatter_op<0>)
#endif
