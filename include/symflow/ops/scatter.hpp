#ifndef SYMFLOW_OPS_SCATTER_HPP
#define SYMFLOW_OPS_SCATTER_HPP
#include <optional>
#include <vector>
#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <string_view>

#include "../expr/derivative_rule.hpp"
#include "../expr/structural.hpp"
#include "../expr/runtime_forms.hpp"
#include "slice.hpp"
#include "law_example.hpp"

namespace symflow {
namespace ops {
namespace scatter_detail {
// part fits at begin, begin + step, ... below end along axis of like.
inline void check_fit(const std::string& who, std::size_t axis, std::size_t begin, std::size_t end, std::size_t step,
                      const runtime_extents& part, const runtime_extents& like) {
  slice_detail::check(who, axis, begin, end, step, like.data(), like.size());
  bool ok = part.size() == like.size() && part[axis] == slice_detail::count(begin, end, step);
  for (std::size_t i = 0; ok && i < like.size(); ++i) ok = i == axis || part[i] == like[i];
  if (!ok)
    throw shape_error(who + ": " + format_extents(part) + " at [" + std::to_string(begin) + ", " + std::to_string(end) +
                      ")" + (step == 1 ? "" : " step " + std::to_string(step)) + " along axis " + std::to_string(axis) +
                      " does not fit in " + format_extents(like));
}
// Zeros of out's extents (elements of `size` bytes), with part's rows copied to their places.
inline void place(std::size_t axis, std::size_t begin, std::size_t end, std::size_t step, const runtime_extents& out_extents,
                  std::size_t size, const void* part, void* out) {
  const std::size_t bytes = element_count(out_extents) * size;
  if (bytes == 0) return;  // no elements, and no storage to point at
  std::memset(out, 0, bytes);
  std::size_t outer = 1, inner = size;
  for (std::size_t i = 0; i < axis; ++i) outer *= out_extents[i];
  for (std::size_t i = axis + 1; i < out_extents.size(); ++i) inner *= out_extents[i];
  const std::size_t rows = slice_detail::count(begin, end, step), out_row = out_extents[axis] * inner;
  const char* from = static_cast<const char*>(part);
  char* to = static_cast<char*>(out);
  if (rows == 0 || inner == 0) return;
  for (std::size_t o = 0; o < outer; ++o) {
    if (step == 1) {
      std::memcpy(to + o * out_row + begin * inner, from, rows * inner);
      from += rows * inner;
      continue;
    }
    for (std::size_t r = 0; r < rows; ++r, from += inner) std::memcpy(to + o * out_row + (begin + r * step) * inner, from, inner);
  }
}
}  // namespace scatter_detail

// scatter<Axis>(part, like, begin, end): a tensor shaped like `like` (whose values are not read),
// zero except indices [begin, end) along Axis, which hold `part`. The adjoint of slice and concat.
template <std::size_t Axis>
struct scatter_op {
  static constexpr std::string_view name = "scatter";
  static constexpr std::string_view doc =
      "scatter(part, like), attributes axis, begin, end and step (>= 1, default 1): a tensor of like's "
      "shape that is zero except at indices begin, begin + step, ... below end along axis, which hold "
      "part. Only like's extents are used: its values are never read. part must have like's rank and "
      "extents except along axis, where its extent is ceil((end - begin) / step), with begin <= end <= "
      "like's extent (a shape error otherwise). The result has part's dtype (any dtype; the zeros are "
      "+0, false for bool), and part's values keep their bits. It is the adjoint of slice and of "
      "concat. Gradient: the slice with the same attributes of g for part, none for like. Example: "
      "scatter with axis 0, begin 1, end 3 of part = [7, 8] into like of shape [4] is [0, 7, 8, 0]; "
      "with begin 0, end 4, step 2 it is [7, 0, 8, 0].";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<dyn, 3>>, law::floating<shape<dyn, 9>>>;
    template <class T>
    static auto of(const auto& x0, const auto& x1) { return scatter<1>(x0, x1, 2, 7, 2); }
  };
  static constexpr bool contiguous_operands = true;
  std::size_t begin = 0, end = 0, step = 1;
  bool operator==(const scatter_op&) const = default;
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
    scatter_detail::check_fit(who, Axis, begin, end, step, runtime_extents(part.begin(), part.end()),
                              runtime_extents(like.begin(), like.end()));
    return like;
  }
  template <class T, class Out, class A, class B>
  void run_cpu(const Out& out, const A& part, const B&) const {
    const runtime_extents e(out.extents().begin(), out.extents().end());
    scatter_detail::place(Axis, begin, end, step, e, sizeof(T), part.data(), out.data());
  }
  // Runtime form (graph interpreter and builder): the axis is a value.
  template <class Attrs>
  static runtime_extents runtime_extents_of(const Attrs& a, const std::vector<runtime_extents>& in, const std::string& who) {
    const auto& part = in.at(0);
    const auto& like = in.at(1);
    const std::size_t axis = runtime_axis(who, a.integer("axis"), like.size());
    const auto r = slice_detail::runtime_range(who, a, axis, like);
    scatter_detail::check_fit(who, axis, r.begin, r.end, r.step, part, like);
    return like;
  }
  template <class Attrs>
  static void run_runtime(const Attrs& a, const runtime_array& out, const std::vector<runtime_array>& in) {
    const std::size_t axis = std::size_t(a.integer("axis"));
    const auto r = slice_detail::runtime_range("scatter", a, axis, out.extents);
    scatter_detail::place(axis, r.begin, r.end, r.step, out.extents, dtype_size(out.type), in[0].data, out.data);
  }
  // Printouts show the range (expr/to_string.hpp): two slices of one tensor are told apart.
  static constexpr bool prints_attributes = true;
  template <class Y, class TA, class TB, class A, class B>
  auto tangent(const Y&, const TA& ta, const TB&, const A&, const B& like) const {
    if constexpr (is_no_gradient_v<TA>) return no_gradient{};
    else return scatter<Axis>(ta, like, begin, end, step);
  }
  // The attributes held as members, for an op of the same family (expr/derivative_rule.hpp).
  constexpr auto members() const { return std::tuple{begin, end, step}; }
  // Derivative rule (expr/derivative_rule.hpp): the part's adjoint is the slice it was put in.
  static auto derivative(const auto& self, const auto& g, const auto&, const auto&, const auto&) {
    return tuple_of(apply_view(sibling<slice_op>(self), g), no_gradient{});
  }
};
}  // namespace ops

template <std::size_t Axis, expression Part, expression Like>
auto scatter(const Part& part, const Like& like, std::size_t begin, std::size_t end, std::size_t step = 1) {
  return make_kernel(ops::scatter_op<Axis>{begin, end, step}, source_site{}, part, like);
}
}  // namespace symflow
#endif  // SYMFLOW_OPS_SCATTER_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(kernel, scatter_op<0>)
#endif
