#ifndef SYMFLOW_OPS_CONCAT_HPP
#define SYMFLOW_OPS_CONCAT_HPP
#include <optional>
#include <vector>
#include <cstring>

#include "../expr/derivative_rule.hpp"
#include "../expr/structural.hpp"
#include "../expr/runtime_forms.hpp"
#include "../expr/leaves.hpp"
#include "slice.hpp"
#include "law_example.hpp"
#include "../expr/onnx_form.hpp"

namespace symflow {
namespace ops {

// Joins operands along one axis; every other extent must agree.
template <std::size_t Axis>
struct concat_op {
  static constexpr std::string_view name = "concat";
  // ONNX Concat.
  static void write_onnx(onnx_node_writer& w) {
    std::vector<std::string> inputs;
    for (std::size_t i = 0; i < w.operand_count(); ++i) inputs.push_back(w.operand(i));
    w.add("Concat", std::move(inputs), {{"axis", w.integer("axis")}}, true);
  }
  static constexpr std::array<std::string_view, 1> onnx_reads{"Concat"};
  static void read_onnx(onnx_node_reader& r) {
    std::vector<onnx_node_reader::value> parts;
    for (std::size_t i = 0; i < r.input_count(); ++i) parts.push_back(r.input(i));
    r.result(r.apply(name, parts, {{"axis", r.axis(r.integer("axis", 0), r.rank_of(0))}}));
  }
  static constexpr std::string_view doc =
      "concat(x0, x1, ...), attribute axis: joins the operands along one axis. They must have one "
      "dtype (any dtype), one rank and equal extents on every other axis (a shape error otherwise); "
      "the result's extent along axis is the sum of theirs, and values are copied bit for bit. "
      "Gradient: each operand gets its own slice of g along axis (in C++ their extents along axis must "
      "be static). Example: concat with axis 1 of [[1], [2]] and [[3, 4], [5, 6]] is [[1, 3, 4], [2, "
      "5, 6]].";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<dyn, 37>>, law::floating<shape<dyn, 5>>>;
    template <class T>
    static auto of(const auto& x0, const auto& x1) { return concat<1>(x0, x1); }
  };
  static constexpr bool contiguous_operands = true;
  // Attributes for the graph value (graph/).
  template <class V>
  static constexpr void visit_attributes(V&& v) {
    v("axis", Axis);
  }
  // Runtime form (graph interpreter and builder): the axis and the operand count are values.
  template <class Attrs>
  static runtime_extents runtime_extents_of(const Attrs& a, const std::vector<runtime_extents>& in, const std::string& who) {
    const std::size_t axis = runtime_axis(who, a.integer("axis"), in.at(0).size());
    runtime_extents out = in[0];
    for (std::size_t k = 1; k < in.size(); ++k) {
      bool ok = in[k].size() == out.size();
      for (std::size_t i = 0; ok && i < out.size(); ++i) ok = i == axis || in[k][i] == in[0][i];
      if (!ok)
        throw shape_error(who + ": cannot concatenate " + format_extents(in[0]) + " and " + format_extents(in[k]) +
                          " along axis " + std::to_string(axis));
      out[axis] += in[k][axis];
    }
    return out;
  }
  template <class Attrs>
  static void run_runtime(const Attrs& a, const runtime_array& out, const std::vector<runtime_array>& in) {
    const std::size_t axis = std::size_t(a.integer("axis")), size = dtype_size(out.type);
    std::size_t outer = 1, inner = size;
    for (std::size_t i = 0; i < axis; ++i) outer *= out.extents[i];
    for (std::size_t i = axis + 1; i < out.extents.size(); ++i) inner *= out.extents[i];
    const std::size_t out_row = out.extents[axis] * inner;
    std::size_t at = 0;
    for (const auto& part : in) {
      const std::size_t block = part.extents[axis] * inner;
      for (std::size_t o = 0; o < outer && block; ++o)
        std::memcpy(static_cast<char*>(out.data) + o * out_row + at, static_cast<const char*>(part.data) + o * block, block);
      at += block;
    }
  }
  template <class T, class... Rest>
  using result_type = T;
  // Its dtype rule (ir/op_registry.hpp): one dtype for every operand (the runtime form copies bytes
  // of the result's element size from each).
  template <class T, class... Rest>
  static constexpr bool accepts = (std::is_same_v<T, Rest> && ...);

  template <class S0, class... S>
  static constexpr bool shapes_ok = [] {
    if constexpr (((S::rank != S0::rank) || ...) || Axis >= S0::rank) {
      return false;
    } else {
      for (std::size_t i = 0; i < S0::rank; ++i) {
        if (i == Axis) continue;
        for (std::size_t e : {S::extents[i]...})
          if (e != S0::extents[i] && e != dyn && S0::extents[i] != dyn) return false;
      }
      return true;
    }
  }();
  template <class S0, class... S>
  static consteval auto result_extents() {
    auto out = S0::extents;
    for (std::size_t e : {S::extents[Axis]...}) out[Axis] = (out[Axis] == dyn || e == dyn) ? dyn : out[Axis] + e;
    return out;
  }
  template <class S0, class... S>
  using result_shape = shape_from_array_t<result_extents<S0, S...>()>;

  template <std::size_t R, class... E>
  static extents_t<R> infer_extents(const auto& who, const extents_t<R>& first, const E&... rest) {
    extents_t<R> out = first;
    auto join = [&](const extents_t<R>& e) {
      for (std::size_t i = 0; i < R; ++i)
        if (i != Axis && e[i] != first[i])
          throw shape_error(who + ": cannot concatenate " + format_extents(first) + " and " +
                            format_extents(e) + " along axis " + std::to_string(Axis));
      out[Axis] += e[Axis];
    };
    (join(rest), ...);
    return out;
  }

  // Forward mode: the tangents concatenated (zeros for operands without one).
  template <class Y, class... TI>
  static auto tangent(const Y&, const TI&... t_and_in) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      const auto all = std::tie(t_and_in...);
      constexpr std::size_t n = sizeof...(TI) / 2;
      auto part = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
        const auto& t = std::get<K>(all);
        const auto& x = std::get<K + n>(all);
        if constexpr (is_no_gradient_v<std::remove_cvref_t<decltype(t)>>)
          return expand_as(zero<value_type_of<decltype(x)>>{}, x);
        else
          return t;
      };
      return concat<Axis>(part(std::integral_constant<std::size_t, I>{})...);
    }(std::make_index_sequence<sizeof...(TI) / 2>{});
  }
  // Derivative rule (expr/derivative_rule.hpp): each operand's adjoint is its part of g, cut at
  // offsets along the axis that must be known (static extents on expression types).
  static constexpr bool derivative_of_parts = true;
  static auto derivative(const auto& self, const auto& g, const auto&, const auto& parts) {
    const auto axis = integer<"axis">(self);
    std::int64_t at = 0;
    return map_parts(parts, [&](const auto& part) {
      const std::int64_t size = std::int64_t(rule_detail::plain(known_extent(part, axis)));
      const auto piece = slice(g, axis, std::size_t(at), std::size_t(at + size));
      at += size;
      return piece;
    });
  }

  // Each operand contributes a contiguous block of `inner` elements per outer index.
  template <class T, class Out, class... In>
  static void run_cpu(const Out& out, const In&... in) {
    constexpr std::size_t R = Out::rank;
    std::size_t outer = 1, inner = 1;
    for (std::size_t i = 0; i < Axis; ++i) outer *= out.extent(i);
    for (std::size_t i = Axis + 1; i < R; ++i) inner *= out.extent(i);
    const std::size_t out_row = out.extent(Axis) * inner;
    std::size_t column = 0;
    auto copy = [&](const auto& v) {
      const std::size_t block = v.extent(Axis) * inner;
      for (std::size_t o = 0; o < outer; ++o)
        std::memcpy(out.data() + o * out_row + column, v.data() + o * block, block * sizeof(T));
      column += block;
    };
    (copy(in), ...);
  }
};
}  // namespace ops

// concat<Axis>(a, b, ...): the operands one after another along Axis (negative: from the last).
template <int Axis, expression A, expression... B>
auto concat(const A& a, const B&... b) {
  constexpr int rank = int(shape_of<A>::rank);
  static_assert(Axis >= -rank && Axis < rank, "symflow: concat: the axis is outside the operands' rank");
  static_assert(ops::concat_op<0>::template accepts<value_type_of<A>, value_type_of<B>...>,
                "symflow: concat needs operands of one dtype");
  if constexpr (Axis >= -rank && Axis < rank)
    return make_kernel(ops::concat_op<std::size_t(Axis < 0 ? Axis + rank : Axis)>{}, source_site{}, a, b...);
}
}  // namespace symflow
#endif  // SYMFLOW_OPS_CONCAT_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(kernel, concat_op<0>)
#endif
