#ifndef SYMFLOW_OPS_GATHER_ELEMENTS_HPP
#define SYMFLOW_OPS_GATHER_ELEMENTS_HPP
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "../expr/derivative_rule.hpp"
#include "../expr/runtime_forms.hpp"
#include "../expr/structural.hpp"
#include "gather.hpp"
#include "law_example.hpp"

namespace symflow {
namespace ops {

template <std::size_t Axis>
struct gather_elements_backward_op;  // the adjoint, below

namespace gather_elements_detail {
// The indices' extents must be within data's except along the axis (torch.gather's and ONNX's rule).
template <class Who>
void check_extents(const Who& who, const runtime_extents& data, const runtime_extents& idx, std::size_t axis) {
  bool ok = data.size() == idx.size();
  for (std::size_t d = 0; ok && d < data.size(); ++d) ok = d == axis || idx[d] <= data[d];
  if (!ok)
    throw shape_error(who + ": indices of shape " + format_extents(idx) + " do not fit data of shape " +
                      format_extents(data) + " (the same rank, and no longer than data along every axis but " +
                      std::to_string(axis) + ")");
}
// For each element of the indices (row-major), the offset in data it reads: its own coordinates
// with the one along `axis` replaced by its index (checked as gather's indices are).
template <class I>
std::vector<std::size_t> data_offsets(const char* who, const I* idx, const runtime_extents& idx_extents,
                                      const runtime_extents& data, std::size_t axis) {
  const std::size_t count = element_count(idx_extents), rank = data.size();
  const auto along = gather_detail::checked_indices(who, idx, count, data[axis]);
  const auto strides = runtime_layout::contiguous(data).strides;
  std::vector<std::size_t> at(count), coordinate(rank, 0);
  for (std::size_t j = 0; j < count; ++j) {
    std::size_t offset = 0;
    for (std::size_t d = 0; d < rank; ++d) offset += (d == axis ? along[j] : coordinate[d]) * strides[d];
    at[j] = offset;
    for (std::size_t d = rank; d-- > 0;) {  // next coordinate of the indices, row-major
      if (++coordinate[d] < idx_extents[d]) break;
      coordinate[d] = 0;
    }
  }
  return at;
}
}  // namespace gather_elements_detail

// gather_elements<Axis>(data, indices): data's elements at per-element indices along Axis
// (ONNX GatherElements, torch.gather, numpy.take_along_axis).
template <std::size_t Axis>
struct gather_elements_op : gather_detail::forward_rules<gather_elements_op, gather_elements_backward_op, Axis> {
  static constexpr std::string_view name = "gather_elements";
  static void write_onnx(onnx_node_writer& w) {
    w.add("GatherElements", {w.operand(0), w.operand(1)}, {{"axis", w.integer("axis")}}, true);
  }
  static constexpr std::array<std::string_view, 1> onnx_reads{"GatherElements"};
  static void read_onnx(onnx_node_reader& r) {
    r.result(r.apply(name, {r.input(0), r.input(1)}, {{"axis", r.axis(r.integer("axis", 0), r.rank_of(0))}}));
  }
  static constexpr std::string_view doc =
      "gather_elements(data, indices), attribute axis (ONNX GatherElements, torch.gather, "
      "numpy.take_along_axis; in C++ gather_elements<Axis>(data, indices), Axis negative from the last): "
      "a tensor of the indices' shape whose element at coordinates c is data's at c with c[axis] "
      "replaced by the index there. The indices (i32 or i64) have data's rank and extents no larger than "
      "data's except along axis (a shape error otherwise); a negative index counts from the end and one "
      "outside [-n, n) is an error naming it. Any dtype; values keep their bits. Gradient: for data "
      "gather_elements_backward, which adds each element of g at the position it was read from (a "
      "position read twice receives the sum); none for the indices. Example: axis 1 of [[1, 2], [3, "
      "4]] at [[0, 0], [1, 0]] is [[1, 1], [4, 3]].";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<dyn, 7>>, law::labels<shape<dyn, 5>, -7, 7>>;
    template <class T>
    static auto of(const auto& data, const auto& indices) { return gather_elements<1>(data, indices); }
  };
  template <class SD, class SI>
  static constexpr bool shapes_ok = Axis < SD::rank && SD::rank == SI::rank;
  template <class SD, class SI>
  using result_shape = SI;

  template <std::size_t R>
  static extents_t<R> infer_extents(const auto& who, const extents_t<R>& data, const extents_t<R>& idx) {
    gather_elements_detail::check_extents(who, gather_detail::as_runtime(data), gather_detail::as_runtime(idx), Axis);
    return idx;
  }
  template <class T, class Out, class D, class I>
  static void run_cpu(const Out& out, const D& data, const I& idx) {
    const auto at = gather_elements_detail::data_offsets("gather_elements", idx.data(), gather_detail::as_runtime(idx.extents()),
                                                         gather_detail::as_runtime(data.extents()), Axis);
    for (std::size_t j = 0; j < at.size(); ++j) out.data()[j] = data.data()[at[j]];
  }
  template <class Attrs>
  static runtime_extents runtime_extents_of(const Attrs& a, const std::vector<runtime_extents>& in, const std::string& who) {
    const std::size_t axis = runtime_axis(who, a.integer("axis"), in.at(0).size());
    gather_elements_detail::check_extents(who, in.at(0), in.at(1), axis);
    return in.at(1);
  }
  template <class Attrs>
  static void run_runtime(const Attrs& a, const runtime_array& out, const std::vector<runtime_array>& in) {
    const std::size_t axis = runtime_axis("gather_elements", a.integer("axis"), in[0].extents.size());
    gather_elements_detail::check_extents(std::string("gather_elements"), in[0].extents, in[1].extents, axis);
    gather_detail::with_indices(in[1].type, "gather_elements", [&](auto index) {
      using I = decltype(index);
      const auto at = gather_elements_detail::data_offsets("gather_elements", static_cast<const I*>(in[1].data),
                                                           in[1].extents, in[0].extents, axis);
      const std::size_t size = dtype_size(in[0].type);
      for (std::size_t j = 0; j < at.size(); ++j)
        std::memcpy(static_cast<char*>(out.data) + j * size, static_cast<const char*>(in[0].data) + at[j] * size, size);
    });
  }
};

// gather_elements_backward<Axis>(g, indices, like): the adjoint, of like's shape (values unread).
template <std::size_t Axis>
struct gather_elements_backward_op
    : gather_detail::backward_rules<gather_elements_op, gather_elements_backward_op, Axis> {
  static constexpr std::string_view name = "gather_elements_backward";
  static constexpr std::string_view doc =
      "gather_elements_backward(g, indices, like), attribute axis: the adjoint of gather_elements, a "
      "tensor of like's shape (its values are never read) that is zero except where an index points: "
      "each element of g (of the indices' shape) is added at the position gather_elements read it "
      "from, in row-major order, so a position read twice receives the sum (ONNX ScatterElements with "
      "reduction add into zeros). f32 or f64; indices i32 or i64, checked as gather_elements' are. "
      "Linear in g: its gradient is gather_elements of the adjoint for g, none for the others. "
      "Example: axis 0, indices [1, 1] and g = [2, 3] into like of shape [3] give [0, 5, 0].";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<dyn, 5>>, law::labels<shape<dyn, 5>, -7, 7>,
                                law::floating<shape<dyn, 7>>>;
    template <class T>
    static auto of(const auto& g, const auto& indices, const auto& like) {
      return make_kernel(gather_elements_backward_op<1>{}, source_site{}, g, indices, like);
    }
  };
  template <class SG, class SI, class SL>
  static constexpr bool shapes_ok = Axis < SL::rank && SG::rank == SL::rank && SI::rank == SL::rank;
  template <class SG, class SI, class SL>
  using result_shape = SL;

  template <class Who>
  static void check(const Who& who, const runtime_extents& g, const runtime_extents& idx, const runtime_extents& like,
                    std::size_t axis) {
    if (g != idx) throw shape_error(who + ": g of shape " + format_extents(g) + " is not the indices' shape " + format_extents(idx));
    gather_elements_detail::check_extents(who, like, idx, axis);
  }
  template <std::size_t R>
  static extents_t<R> infer_extents(const auto& who, const extents_t<R>& g, const extents_t<R>& idx, const extents_t<R>& like) {
    check(who, gather_detail::as_runtime(g), gather_detail::as_runtime(idx), gather_detail::as_runtime(like), Axis);
    return like;
  }
  template <class T>
  static void add_at(const T* g, T* out, std::size_t out_count, const std::vector<std::size_t>& at) {
    std::fill_n(out, out_count, T(0));
    for (std::size_t j = 0; j < at.size(); ++j) out[at[j]] += g[j];
  }
  template <class T, class Out, class G, class I, class L>
  static void run_cpu(const Out& out, const G& g, const I& idx, const L&) {
    const auto at = gather_elements_detail::data_offsets("gather_elements_backward", idx.data(),
                                                         gather_detail::as_runtime(idx.extents()),
                                                         gather_detail::as_runtime(out.extents()), Axis);
    add_at<T>(g.data(), out.data(), out.size(), at);
  }
  template <class Attrs>
  static runtime_extents runtime_extents_of(const Attrs& a, const std::vector<runtime_extents>& in, const std::string& who) {
    const std::size_t axis = runtime_axis(who, a.integer("axis"), in.at(2).size());
    check(who, in.at(0), in.at(1), in.at(2), axis);
    return in.at(2);
  }
  template <class Attrs>
  static void run_runtime(const Attrs& a, const runtime_array& out, const std::vector<runtime_array>& in) {
    const char* who = "gather_elements_backward";
    const std::size_t axis = runtime_axis(who, a.integer("axis"), out.extents.size());
    check(std::string(who), in[0].extents, in[1].extents, out.extents, axis);
    gather_detail::with_indices(in[1].type, who, [&](auto index) {
      using I = decltype(index);
      const auto at = gather_elements_detail::data_offsets(who, static_cast<const I*>(in[1].data), in[1].extents, out.extents, axis);
      const std::size_t n = element_count(out.extents);
      with_float_element(out.type, name, [&](auto zero) {
        using T = decltype(zero);
        add_at(static_cast<const T*>(in[0].data), out.as<T>(), n, at);
      });
    });
  }
};
}  // namespace ops

// gather_elements<Axis>(data, indices): per-element indices along Axis (negative: from the last).
template <int Axis, expression D, expression I>
auto gather_elements(const D& data, const I& indices, source_site where = source_site::current()) {
  constexpr int rank = int(shape_of<D>::rank);
  static_assert(Axis >= -rank && Axis < rank, "symflow: gather_elements: the axis is outside data's rank");
  static_assert(shape_of<I>::rank == shape_of<D>::rank, "symflow: gather_elements: the indices must have data's rank");
  static_assert(std::is_integral_v<value_type_of<I>> && !std::is_same_v<value_type_of<I>, bool>,
                "symflow: gather_elements: the indices must be integers (i32 or i64)");
  if constexpr (Axis >= -rank && Axis < rank && shape_of<I>::rank == shape_of<D>::rank)
    return make_kernel(ops::gather_elements_op<std::size_t(Axis < 0 ? Axis + rank : Axis)>{}, where, data, indices);
}
}  // namespace symflow
#endif  // SYMFLOW_OPS_GATHER_ELEMENTS_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(kernel, gather_elements_op<0>)
SYMFLOW_LISTED(kernel, gather_elements_backward_op<0>)
#endif
