#ifndef SYMFLOW_OPS_GATHER_HPP
#define SYMFLOW_OPS_GATHER_HPP
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
#include "law_example.hpp"
#include "../expr/onnx_form.hpp"

namespace symflow {
namespace ops {

template <std::size_t Axis>
struct gather_backward_op;  // gather's adjoint, below

namespace gather_detail {
// data seen as [outer, n, inner] around the gathered axis.
struct frame {
  std::size_t outer = 1, n = 0, inner = 1;
};
inline frame frame_of(const runtime_extents& data, std::size_t axis) {
  frame f;
  for (std::size_t i = 0; i < axis; ++i) f.outer *= data[i];
  f.n = data[axis];
  for (std::size_t i = axis + 1; i < data.size(); ++i) f.inner *= data[i];
  return f;
}
// The indices as offsets along the axis: negative ones count from the end, and any outside
// [-n, n) is an error naming it (checked before anything is read or written).
template <class I>
std::vector<std::size_t> checked_indices(const char* who, const I* idx, std::size_t count, std::size_t n) {
  std::vector<std::size_t> at(count);
  for (std::size_t j = 0; j < count; ++j) {
    const std::int64_t v = std::int64_t(idx[j]), k = v < 0 ? v + std::int64_t(n) : v;
    if (k < 0 || k >= std::int64_t(n))
      throw value_error(std::string(who) + ": index " + std::to_string(v) + " (element " + std::to_string(j) +
                        " of the indices) is outside [-" + std::to_string(n) + ", " + std::to_string(n) +
                        "), the extent of the gathered axis");
    at[j] = std::size_t(k);
  }
  return at;
}
// out[o, j, :] = data[o, at[j], :], element size `size` bytes.
inline void gather_rows(const char* data, char* out, const frame& f, const std::vector<std::size_t>& at,
                        std::size_t size) {
  const std::size_t row = f.inner * size;
  if (row == 0) return;  // an empty row: the operands may have no storage to point at
  for (std::size_t o = 0; o < f.outer; ++o)
    for (std::size_t j = 0; j < at.size(); ++j)
      std::memcpy(out + (o * at.size() + j) * row, data + (o * f.n + at[j]) * row, row);
}
// out = 0; out[o, at[j], :] += g[o, j, :], in the order of j (repeated indices add up).
template <class T>
void scatter_add_rows(const T* g, T* out, const frame& f, const std::vector<std::size_t>& at) {
  std::fill_n(out, f.outer * f.n * f.inner, T(0));
  for (std::size_t o = 0; o < f.outer; ++o)
    for (std::size_t j = 0; j < at.size(); ++j) {
      const T* src = g + (o * at.size() + j) * f.inner;
      T* dst = out + (o * f.n + at[j]) * f.inner;
      for (std::size_t i = 0; i < f.inner; ++i) dst[i] += src[i];
    }
}
template <class F>
void with_indices(dtype d, const char* who, F&& f) {
  if (d == dtype::i32) f(std::int32_t{});
  else if (d == dtype::i64) f(std::int64_t{});
  else throw value_error(std::string(who) + ": indices must be i32 or i64, not " + std::string(dtype_name(d)));
}
// data[:axis] + indices + data[axis + 1:].
inline runtime_extents gathered_extents(const runtime_extents& data, const runtime_extents& idx, std::size_t axis) {
  runtime_extents out(data.begin(), data.begin() + std::ptrdiff_t(axis));
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), data.begin() + std::ptrdiff_t(axis) + 1, data.end());
  return out;
}
template <class Range>
runtime_extents as_runtime(const Range& r) {
  return runtime_extents(r.begin(), r.end());
}

// What an indexing op (gather, gather_elements) and its adjoint share: the axis attribute, and
// rules that are linear in the first operand and swap the two ops. Forward(data, indices);
// Backward(g, indices, like), like supplying extents only.
template <template <std::size_t> class Forward, template <std::size_t> class Backward, std::size_t Axis>
struct forward_rules {
  template <class V>
  static void visit_attributes(V&& v) {
    v("axis", Axis);
  }
  static constexpr bool contiguous_operands = true;
  template <class D, class I>
  using result_type = D;
  template <class D, class I>
  static constexpr bool accepts = std::is_integral_v<I> && !std::is_same_v<I, bool>;
  template <class Y, class TD, class TI, class D, class I>
  static auto tangent(const Y&, const TD& td, const TI&, const D&, const I& idx) {
    if constexpr (is_no_gradient_v<TD>) return no_gradient{};
    else return make_kernel(Forward<Axis>{}, source_site{}, td, idx);
  }
  // Derivative rule (expr/derivative_rule.hpp): g's parts added back where they were read from.
  static auto derivative(const auto& self, const auto& g, const auto&, const auto& data, const auto& indices) {
    return tuple_of(apply_kernel(sibling<Backward>(self), g, indices, data), no_gradient{});
  }
};
template <template <std::size_t> class Forward, template <std::size_t> class Backward, std::size_t Axis>
struct backward_rules {
  template <class V>
  static void visit_attributes(V&& v) {
    v("axis", Axis);
  }
  static constexpr bool contiguous_operands = true;
  template <std::size_t I>
  static constexpr bool reads_operand = I < 2;
  template <class G, class I, class L>
  using result_type = G;
  template <class G, class I, class L>  // like gives extents only: any dtype
  static constexpr bool accepts = std::is_floating_point_v<G> && std::is_integral_v<I> && !std::is_same_v<I, bool>;
  template <class Y, class TG, class TI, class TL, class G, class I, class L>
  static auto tangent(const Y&, const TG& tg, const TI&, const TL&, const G&, const I& idx, const L& like) {
    if constexpr (is_no_gradient_v<TG>) return no_gradient{};
    else return make_kernel(Backward<Axis>{}, source_site{}, tg, idx, like);
  }
  // Derivative rule (expr/derivative_rule.hpp): linear in g, whose adjoint is the forward op of the
  // incoming adjoint; the indices and like get none.
  static auto derivative(const auto& self, const auto& a, const auto&, const auto&, const auto& indices, const auto&) {
    return tuple_of(apply_kernel(sibling<Forward>(self), a, indices), no_gradient{}, no_gradient{});
  }
};
}  // namespace gather_detail

// gather<Axis>(data, indices): data's slices along Axis picked by integer indices (ONNX Gather,
// numpy.take); embedding(table, ids) is gather<0>.
template <std::size_t Axis>
struct gather_op : gather_detail::forward_rules<gather_op, gather_backward_op, Axis> {
  static constexpr std::string_view name = "gather";
  // ONNX Gather (negative indices count from the end there too).
  static void write_onnx(onnx_node_writer& w) {
    w.add("Gather", {w.operand(0), w.operand(1)}, {{"axis", w.integer("axis")}}, true);
  }
  static constexpr std::array<std::string_view, 1> onnx_reads{"Gather"};
  static void read_onnx(onnx_node_reader& r) {
    r.result(r.apply(name, {r.input(0), r.input(1)}, {{"axis", r.axis(r.integer("axis", 0), r.rank_of(0))}}));
  }
  static constexpr std::string_view doc =
      "gather(data, indices), attribute axis (ONNX Gather, numpy.take; in C++ gather<Axis>(data, "
      "indices), Axis negative from the last, and embedding(table, ids) = gather<0>): the slices of "
      "data along axis at the given integer indices (i32 or i64, any shape); the result's shape is "
      "data's with that axis replaced by the indices' shape. A negative index counts from the end; an "
      "index outside [-n, n) (n: the axis's extent) is an error naming it, never a read out of bounds. "
      "Any dtype; values keep their bits. Gradient: for data gather_backward, which adds g's slices "
      "into zeros of data's shape at their indices (a repeated index receives the sum); none for the "
      "indices. Example: gather along axis 0 of [[1, 2], [3, 4], [5, 6]] at [2, -3, 2] is [[5, 6], "
      "[1, 2], [5, 6]].";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<5, 4>>, law::labels<shape<dyn, 6>, -5, 5>>;
    template <class T>
    static auto of(const auto& data, const auto& indices) { return gather<0>(data, indices); }
  };
  template <class SD, class SI>
  static constexpr bool shapes_ok = Axis < SD::rank;
  // A function, not a lambda in the template argument: clang 14 crashes instantiating such a
  // lambda when the op registry probes this rule's operand count.
  template <class SD, class SI>
  static constexpr auto gathered_shape() {
    std::array<std::size_t, SD::rank - 1 + SI::rank> out{};
    std::size_t j = 0;
    for (std::size_t i = 0; i < Axis; ++i) out[j++] = SD::extents[i];
    for (std::size_t i = 0; i < SI::rank; ++i) out[j++] = SI::extents[i];
    for (std::size_t i = Axis + 1; i < SD::rank; ++i) out[j++] = SD::extents[i];
    return out;
  }
  template <class SD, class SI>
  using result_shape = shape_from_array_t<gathered_shape<SD, SI>()>;

  template <std::size_t RD, std::size_t RI>
  static extents_t<RD - 1 + RI> infer_extents(const auto&, const extents_t<RD>& data, const extents_t<RI>& idx) {
    const auto e = gather_detail::gathered_extents(gather_detail::as_runtime(data), gather_detail::as_runtime(idx), Axis);
    extents_t<RD - 1 + RI> out{};
    std::copy(e.begin(), e.end(), out.begin());
    return out;
  }
  template <class T, class Out, class D, class I>
  static void run_cpu(const Out& out, const D& data, const I& idx) {
    const auto f = gather_detail::frame_of(gather_detail::as_runtime(data.extents()), Axis);
    const auto at = gather_detail::checked_indices("gather", idx.data(), idx.size(), f.n);
    gather_detail::gather_rows(reinterpret_cast<const char*>(data.data()), reinterpret_cast<char*>(out.data()), f, at,
                               sizeof(T));
  }
  // Runtime form (graph interpreter and builder): the axis is a value.
  template <class Attrs>
  static runtime_extents runtime_extents_of(const Attrs& a, const std::vector<runtime_extents>& in, const std::string& who) {
    const std::size_t axis = runtime_axis(who, a.integer("axis"), in.at(0).size());
    return gather_detail::gathered_extents(in.at(0), in.at(1), axis);
  }
  template <class Attrs>
  static void run_runtime(const Attrs& a, const runtime_array& out, const std::vector<runtime_array>& in) {
    const auto f = gather_detail::frame_of(in[0].extents, runtime_axis("gather", a.integer("axis"), in[0].extents.size()));
    gather_detail::with_indices(in[1].type, "gather", [&](auto index) {
      using I = decltype(index);
      const auto at = gather_detail::checked_indices("gather", static_cast<const I*>(in[1].data), element_count(in[1].extents), f.n);
      gather_detail::gather_rows(static_cast<const char*>(in[0].data), static_cast<char*>(out.data), f, at,
                                 dtype_size(in[0].type));
    });
  }
};

// gather_backward<Axis>(g, indices, like): gather's adjoint, of like's shape (its values unread).
template <std::size_t Axis>
struct gather_backward_op : gather_detail::backward_rules<gather_op, gather_backward_op, Axis> {
  static constexpr std::string_view name = "gather_backward";
  static constexpr std::string_view doc =
      "gather_backward(g, indices, like), attribute axis: the adjoint of gather, a tensor of like's "
      "shape (like's values are never read) that is zero except where an index points: g's slice j "
      "is added at slice indices[j] along axis, in the order of j, so a repeated index receives the "
      "sum. g must have the shape gather gives like and the indices (a shape error otherwise); f32 or "
      "f64; indices i32 or i64, checked as gather's are. Linear in g: its gradient is gather of the "
      "adjoint for g, none for the indices or like. Example: axis 0, indices [1, 1, 0] and g = [1, 2, "
      "4] into like of shape [3] give [4, 3, 0].";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<dyn, 6, 4>>, law::labels<shape<dyn, 6>, -5, 5>,
                                law::floating<shape<5, 4>>>;
    template <class T>
    static auto of(const auto& g, const auto& indices, const auto& like) {
      return make_kernel(gather_backward_op{}, source_site{}, g, indices, like);
    }
  };
  template <class SG, class SI, class SL>
  static constexpr bool shapes_ok = Axis < SL::rank && SG::rank + 1 == SL::rank + SI::rank;
  template <class SG, class SI, class SL>
  using result_shape = SL;

  template <class Who>
  static void check(const Who& who, const runtime_extents& g, const runtime_extents& idx, const runtime_extents& like,
                    std::size_t axis) {
    if (gather_detail::gathered_extents(like, idx, axis) != g)
      throw shape_error(who + ": g of shape " + format_extents(g) + " is not what gather gives a value of shape " +
                        format_extents(like) + " and indices of shape " + format_extents(idx) + " along axis " +
                        std::to_string(axis));
  }
  template <std::size_t RG, std::size_t RI, std::size_t RL>
  static extents_t<RL> infer_extents(const auto& who, const extents_t<RG>& g, const extents_t<RI>& idx,
                                     const extents_t<RL>& like) {
    check(who, gather_detail::as_runtime(g), gather_detail::as_runtime(idx), gather_detail::as_runtime(like), Axis);
    return like;
  }
  template <class T, class Out, class G, class I, class L>
  static void run_cpu(const Out& out, const G& g, const I& idx, const L&) {
    const auto f = gather_detail::frame_of(gather_detail::as_runtime(out.extents()), Axis);
    const auto at = gather_detail::checked_indices("gather_backward", idx.data(), idx.size(), f.n);
    gather_detail::scatter_add_rows<T>(g.data(), out.data(), f, at);
  }
  template <class Attrs>
  static runtime_extents runtime_extents_of(const Attrs& a, const std::vector<runtime_extents>& in, const std::string& who) {
    const std::size_t axis = runtime_axis(who, a.integer("axis"), in.at(2).size());
    check(who, in.at(0), in.at(1), in.at(2), axis);
    return in.at(2);
  }
  template <class Attrs>
  static void run_runtime(const Attrs& a, const runtime_array& out, const std::vector<runtime_array>& in) {
    const auto f = gather_detail::frame_of(out.extents, runtime_axis("gather_backward", a.integer("axis"), out.extents.size()));
    gather_detail::with_indices(in[1].type, "gather_backward", [&](auto index) {
      using I = decltype(index);
      const auto at = gather_detail::checked_indices("gather_backward", static_cast<const I*>(in[1].data),
                                                     element_count(in[1].extents), f.n);
      with_float_element(out.type, name, [&](auto zero) {
        using T = decltype(zero);
        gather_detail::scatter_add_rows(static_cast<const T*>(in[0].data), out.as<T>(), f, at);
      });
    });
  }
};
}  // namespace ops

// gather<Axis>(data, indices): data's slices along Axis (negative: from the last) at the indices.
template <int Axis, expression D, expression I>
auto gather(const D& data, const I& indices, source_site where = source_site::current()) {
  constexpr int rank = int(shape_of<D>::rank);
  static_assert(Axis >= -rank && Axis < rank, "symflow: gather: the axis is outside data's rank");
  static_assert(std::is_integral_v<value_type_of<I>> && !std::is_same_v<value_type_of<I>, bool>,
                "symflow: gather: the indices must be integers (i32 or i64)");
  if constexpr (Axis >= -rank && Axis < rank)
    return make_kernel(ops::gather_op<std::size_t(Axis < 0 ? Axis + rank : Axis)>{}, where, data, indices);
}
// embedding(table, ids): the rows of table [vocabulary, width] at ids (any shape): ids' shape + [width].
template <expression Table, expression Ids>
auto embedding(const Table& table, const Ids& ids, source_site where = source_site::current()) {
  static_assert(shape_of<Table>::rank == 2, "symflow: embedding: the table must be [vocabulary, width]");
  return gather<0>(table, ids, where);
}
}  // namespace symflow
#endif  // SYMFLOW_OPS_GATHER_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(kernel, gather_op<0>)
SYMFLOW_LISTED(kernel, gather_backward_op<0>)
#endif
