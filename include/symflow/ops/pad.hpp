#ifndef SYMFLOW_OPS_PAD_HPP
#define SYMFLOW_OPS_PAD_HPP
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "../expr/derivative_rule.hpp"
#include "../expr/runtime_forms.hpp"
#include "../expr/structural.hpp"
#include "expand_as.hpp"
#include "law_example.hpp"
#include "where.hpp"
#include "../expr/onnx_form.hpp"

namespace symflow {

// How pad fills the new border: zeros (or a value, see pad()), the mirror image of the elements
// next to the border without repeating the edge (numpy 'reflect', ONNX 'reflect', PyTorch
// 'reflect'), or copies of the edge element (numpy 'edge', ONNX 'edge', PyTorch 'replicate').
enum class pad_mode : std::size_t { constant = 0, reflect = 1, edge = 2 };

namespace ops {

template <std::size_t Mode, std::size_t... Pads>
struct pad_backward_op;  // pad's adjoint, below

namespace pad_detail {
inline std::string mode_name(std::size_t mode) {
  return mode == 0 ? "constant" : mode == 1 ? "reflect" : mode == 2 ? "edge" : "mode " + std::to_string(mode);
}
// The result's extents, after checking the pads against the operand: reflect needs each pad
// shorter than its axis, edge an axis of at least one element where it pads.
inline runtime_extents padded_extents(const std::string& who, const runtime_extents& in,
                                      const std::vector<std::int64_t>& pads, std::size_t mode) {
  const std::size_t rank = in.size();
  if (pads.size() != 2 * rank)
    throw shape_error(who + ": " + std::to_string(pads.size()) + " pads for an operand of rank " + std::to_string(rank) +
                      "; give a begin and an end pad per axis (" + std::to_string(2 * rank) + ")");
  if (mode > 2) throw shape_error(who + ": unknown mode " + std::to_string(mode) + " (0 constant, 1 reflect, 2 edge)");
  runtime_extents out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t b = pads[i], e = pads[rank + i], n = std::int64_t(in[i]);
    if (b < 0 || e < 0)
      throw shape_error(who + ": negative pad on axis " + std::to_string(i) + " (crop with slice instead)");
    if (b > (std::int64_t(1) << 32) || e > (std::int64_t(1) << 32))
      throw shape_error(who + ": a pad of " + std::to_string(std::max(b, e)) + " on axis " + std::to_string(i) +
                        " is over the limit of 2^32");
    if (mode == 1 && (b >= n || e >= n) && (b > 0 || e > 0))
      throw shape_error(who + ": reflect padding of " + std::to_string(std::max(b, e)) + " on axis " + std::to_string(i) +
                        " needs an axis longer than that, not " + std::to_string(n));
    if (mode == 2 && n == 0 && (b > 0 || e > 0))
      throw shape_error(who + ": edge padding on axis " + std::to_string(i) + ", which has no element to repeat");
    out[i] = in[i] + std::size_t(b + e);
  }
  return out;
}
// For each position along one axis of the result, the position it reads in the operand, or -1
// (a constant border).
inline std::vector<std::int64_t> source_positions(std::size_t n, std::int64_t begin, std::size_t out_n, std::size_t mode) {
  std::vector<std::int64_t> at(out_n);
  const std::int64_t last = std::int64_t(n) - 1;
  for (std::size_t o = 0; o < out_n; ++o) {
    std::int64_t s = std::int64_t(o) - begin;
    if (s < 0 || s > last) {
      if (mode == 0) s = -1;
      else if (mode == 1) s = s < 0 ? -s : 2 * last - s;
      else s = s < 0 ? 0 : last;
    }
    at[o] = s;
  }
  return at;
}
// Visits every element of the result in order with the operand offset it reads (-1: border).
template <class F>
void for_each_source(const runtime_extents& in, const runtime_extents& out, const std::vector<std::int64_t>& pads,
                     std::size_t mode, F&& f) {
  const std::size_t rank = in.size();
  std::vector<std::vector<std::int64_t>> at(rank);
  std::vector<std::int64_t> in_stride(rank, 1);
  for (std::size_t i = rank; i-- > 0;) {
    at[i] = source_positions(in[i], pads[i], out[i], mode);
    if (i + 1 < rank) in_stride[i] = in_stride[i + 1] * std::int64_t(in[i + 1]);
  }
  std::size_t total = 1;
  for (std::size_t e : out) total *= e;
  std::vector<std::size_t> index(rank, 0);
  for (std::size_t k = 0; k < total; ++k) {
    std::int64_t offset = 0;
    for (std::size_t i = 0; i < rank && offset >= 0; ++i) {
      const std::int64_t s = at[i][index[i]];
      offset = s < 0 ? -1 : offset + s * in_stride[i];
    }
    f(k, offset);
    for (std::size_t i = rank; i-- > 0;) {
      if (++index[i] < out[i]) break;
      index[i] = 0;
    }
  }
}
template <class Range>
runtime_extents as_runtime(const Range& r) {
  return runtime_extents(r.begin(), r.end());
}
// What pad and pad_backward share: the attributes (the pads in ONNX's order, the mode).
template <std::size_t Mode, std::size_t... Pads>
struct attributes {
  static constexpr std::array<std::size_t, sizeof...(Pads)> pads{Pads...};
  template <class V>
  static constexpr void visit_attributes(V&& v) {
    v("pads", pads);
    v("mode", Mode);
  }
  static constexpr bool contiguous_operands = true;
  static std::vector<std::int64_t> pad_list() { return {std::int64_t(Pads)...}; }
};
}  // namespace pad_detail

// pad<Mode, Pads...>(x): pads as ONNX's (begin of every axis, then end of every axis).
template <std::size_t Mode, std::size_t... Pads>
struct pad_op : pad_detail::attributes<Mode, Pads...> {
  using pad_detail::attributes<Mode, Pads...>::pads;
  using pad_detail::attributes<Mode, Pads...>::pad_list;
  static constexpr std::string_view name = "pad";
  // ONNX Pad (opset 11 and later: the pads as an input, the fill 0), mode by name.
  static void write_onnx(onnx_node_writer& w) {
    const std::int64_t mode = w.integer("mode");
    if (mode < 0 || mode > 2) w.refuse("pad mode " + std::to_string(mode));
    w.add("Pad", {w.operand(0), w.int64s(w.integers("pads"))}, {{"mode", pad_detail::mode_name(std::size_t(mode))}}, true);
  }
  // ONNX Pad: pads (and, from opset 11, the fill value) as inputs; a fill other than 0 is a where
  // over the padded mask of the operand's extent. Negative pads (crops) are refused.
  static constexpr std::array<std::string_view, 1> onnx_reads{"Pad"};
  static void read_onnx(onnx_node_reader& r) {
    const onnx_node_reader::value x = r.input(0);
    const bool inputs = r.opset() >= 11;
    std::vector<std::int64_t> pads = inputs ? r.constant_integers(1) : r.integers("pads", {});
    const std::size_t rank = r.rank_of(0);
    if (r.has_input(3)) {  // axes (opset 18): pads for the listed axes only
      const std::vector<std::int64_t> axes = r.axes(r.constant_integers(3), rank);
      if (pads.size() != 2 * axes.size()) r.refuse("pads and axes differ in length");
      std::vector<std::int64_t> all(2 * rank, 0);
      for (std::size_t k = 0; k < axes.size(); ++k) all[axes[k]] = pads[k], all[rank + axes[k]] = pads[axes.size() + k];
      pads = all;
    }
    if (pads.size() != 2 * rank) r.refuse("pads has " + std::to_string(pads.size()) + " values for rank " + std::to_string(rank));
    for (std::int64_t p : pads)
      if (p < 0) r.refuse("negative pads (a crop) are not supported");
    const std::string mode = r.text("mode", "constant");
    if (mode != "constant" && mode != "reflect" && mode != "edge") r.refuse("mode '" + mode + "'");
    const pad_mode m = mode == "constant" ? pad_mode::constant : mode == "reflect" ? pad_mode::reflect : pad_mode::edge;
    double fill = inputs ? 0.0 : r.number("value", 0.0);
    if (inputs && r.has_input(2)) {
      const std::vector<double> v = r.constant_numbers(2);
      if (v.size() != 1) r.refuse("constant_value is not one value");
      fill = v[0];
    }
    const std::vector<op_attribute> a{{"pads", pads}, {"mode", std::int64_t(m)}};
    const onnx_node_reader::value y = r.apply(name, {x}, a);
    if (m != pad_mode::constant || (fill == 0 && !std::signbit(fill))) return r.result(y);
    const onnx_node_reader::value inside =
        r.apply(name, {r.apply(expand_as_op::name, {r.scalar(dtype::boolean, 1), x})}, a);
    r.result(r.apply(where_op::name, {inside, y, r.scalar(r.dtype_of(x), fill)}));
  }
  static constexpr std::string_view doc =
      "pad(x), attributes pads and mode (ONNX Pad, numpy.pad, torch.nn.functional.pad; in C++ "
      "pad<b0, b1, ..., e0, e1, ...>(x[, value]) or pad<pad_mode::reflect, ...>(x)): x with pads[i] "
      "elements added before axis i and pads[rank + i] after it (the pads' order is ONNX's; negative "
      "pads are refused: crop with slice). mode 0 (constant) fills the border with zeros, in C++ with "
      "any value or scalar expression (a where over the padded mask); mode 1 (reflect) mirrors the "
      "elements next to the border without repeating the edge one, so a pad must be shorter than its "
      "axis; mode 2 (edge) repeats the edge element. Any dtype; values keep their bits. Gradient: "
      "pad_backward, which adds each element of g to the element it was read from (the border of "
      "constant mode reads nothing). Example: pads [0, 2, 0, 1] of [[1, 2, 3]] give [[0, 0, 1, 2, 3, "
      "0]] (constant), [[3, 2, 1, 2, 3, 2]] (reflect), [[1, 1, 1, 2, 3, 3]] (edge).";
  // The law tests' instance of this op (ops/law_example.hpp): reflect, the mode whose adjoint adds
  // several elements of g into one.
  struct law_example {
    using operands = std::tuple<law::floating<shape<dyn, 5, 4>>>;
    template <class T>
    static auto of(const auto& x0) { return make_kernel(pad_op<1, 0, 2, 1, 0, 1, 3>{}, source_site{}, x0); }
  };
  template <class X>
  using result_type = X;
  template <class X>
  static constexpr bool accepts = true;
  template <class S>
  static constexpr bool shapes_ok = 2 * S::rank == sizeof...(Pads) && [] {
    if constexpr (2 * S::rank != sizeof...(Pads)) {
      return false;
    } else {
      for (std::size_t i = 0; i < S::rank; ++i) {
        const std::size_t n = S::extents[i], most = std::max(pads[i], pads[S::rank + i]);
        if (n == dyn || most == 0) continue;
        if (Mode == 1 && most >= n) return false;
        if (Mode == 2 && n == 0) return false;
      }
      return true;
    }
  }();
  template <class S>
  using result_shape = shape_from_array_t<[] {
    std::array<std::size_t, S::rank> out{};
    for (std::size_t i = 0; i < S::rank; ++i)
      out[i] = S::extents[i] == dyn ? dyn : S::extents[i] + pads[i] + pads[S::rank + i];
    return out;
  }()>;

  template <std::size_t R>
  static extents_t<R> infer_extents(const auto& who, const extents_t<R>& in) {
    const auto e = pad_detail::padded_extents(who, pad_detail::as_runtime(in), pad_list(), Mode);
    extents_t<R> out{};
    std::copy(e.begin(), e.end(), out.begin());
    return out;
  }
  // out[k] = x[source] or 0 at a constant border; elements of `size` bytes.
  static void run_on(const char* x, char* out, const runtime_extents& in, const runtime_extents& out_extents,
                     const std::vector<std::int64_t>& pads, std::size_t mode, std::size_t size) {
    pad_detail::for_each_source(in, out_extents, pads, mode, [&](std::size_t k, std::int64_t s) {
      if (s < 0) std::memset(out + k * size, 0, size);
      else std::memcpy(out + k * size, x + std::size_t(s) * size, size);
    });
  }
  template <class T, class Out, class X>
  static void run_cpu(const Out& out, const X& x) {
    run_on(reinterpret_cast<const char*>(x.data()), reinterpret_cast<char*>(out.data()),
           pad_detail::as_runtime(x.extents()), pad_detail::as_runtime(out.extents()), pad_list(), Mode, sizeof(T));
  }
  // Runtime form (graph interpreter and builder): the attributes are values.
  template <class Attrs>
  static runtime_extents runtime_extents_of(const Attrs& a, const std::vector<runtime_extents>& in, const std::string& who) {
    return pad_detail::padded_extents(who, in.at(0), a.integers("pads"), std::size_t(a.integer("mode")));
  }
  template <class Attrs>
  static void run_runtime(const Attrs& a, const runtime_array& out, const std::vector<runtime_array>& in) {
    run_on(static_cast<const char*>(in[0].data), static_cast<char*>(out.data), in[0].extents, out.extents,
           a.integers("pads"), std::size_t(a.integer("mode")), dtype_size(in[0].type));
  }
  // Linear in x (the border is 0 or a copy): the tangent is the same padding of x's tangent.
  template <class Y, class TX, class X>
  static auto tangent(const Y&, const TX& tx, const X&) {
    if constexpr (is_no_gradient_v<TX>) return no_gradient{};
    else return make_kernel(pad_op{}, source_site{}, tx);
  }
  // Derivative rule (expr/derivative_rule.hpp): g's elements added back where they were read from.
  static auto derivative(const auto& self, const auto& g, const auto&, const auto& x) {
    return tuple_of(apply_kernel(sibling<pad_backward_op>(self), g, x));
  }
};

// pad_backward(g, like): pad's adjoint, of like's shape (like's values unread).
template <std::size_t Mode, std::size_t... Pads>
struct pad_backward_op : pad_detail::attributes<Mode, Pads...> {
  using pad_detail::attributes<Mode, Pads...>::pad_list;
  static constexpr std::string_view name = "pad_backward";
  static constexpr std::string_view doc =
      "pad_backward(g, like), attributes pads and mode (as pad's): the adjoint of pad, a tensor of "
      "like's shape (like's values are never read) in which each element of g is added to the element "
      "pad read it from: the interior of g, plus, in reflect and edge modes, the border elements onto "
      "their mirror or edge element (in the order of g's elements). g must have the extents pad gives "
      "like (a shape error otherwise); f32 or f64. Linear in g: its gradient is pad of the adjoint, "
      "none for like. Example: pads [2, 1] (edge) with g = [1, 2, 3, 4] and like of shape [1] give "
      "[10].";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<dyn, 8, 8>>, law::floating<shape<dyn, 5, 4>>>;
    template <class T>
    static auto of(const auto& g, const auto& like) {
      return make_kernel(pad_backward_op<1, 0, 2, 1, 0, 1, 3>{}, source_site{}, g, like);
    }
  };
  template <std::size_t I>
  static constexpr bool reads_operand = I == 0;
  template <class G, class L>
  using result_type = G;
  template <class G, class L>  // like gives extents only: any dtype
  static constexpr bool accepts = std::is_floating_point_v<G>;
  template <class SG, class SL>
  static constexpr bool shapes_ok = SG::rank == SL::rank && 2 * SL::rank == sizeof...(Pads);
  template <class SG, class SL>
  using result_shape = SL;

  static void check(const std::string& who, const runtime_extents& g, const runtime_extents& like,
                    const std::vector<std::int64_t>& pads, std::size_t mode) {
    if (pad_detail::padded_extents(who, like, pads, mode) != g)
      throw shape_error(who + ": g of shape " + format_extents(g) + " is not what pad gives a value of shape " +
                        format_extents(like) + " (" + pad_detail::mode_name(mode) + ")");
  }
  template <std::size_t R>
  static extents_t<R> infer_extents(const auto& who, const extents_t<R>& g, const extents_t<R>& like) {
    check(who, pad_detail::as_runtime(g), pad_detail::as_runtime(like), pad_list(), Mode);
    return like;
  }
  template <class T>
  static void run_on(const T* g, T* out, const runtime_extents& g_extents, const runtime_extents& out_extents,
                     const std::vector<std::int64_t>& pads, std::size_t mode) {
    std::size_t n = 1;
    for (std::size_t e : out_extents) n *= e;
    std::fill_n(out, n, T(0));
    pad_detail::for_each_source(out_extents, g_extents, pads, mode, [&](std::size_t k, std::int64_t s) {
      if (s >= 0) out[s] += g[k];
    });
  }
  template <class T, class Out, class G, class L>
  static void run_cpu(const Out& out, const G& g, const L&) {
    run_on<T>(g.data(), out.data(), pad_detail::as_runtime(g.extents()), pad_detail::as_runtime(out.extents()), pad_list(),
              Mode);
  }
  // The graph builder probes this rule with every unknown extent the same number, which no padded
  // g and its like can both have: the rule checks what the probes allow (ranks, pads, mode), and the
  // run checks g against like.
  template <class Attrs>
  static runtime_extents runtime_extents_of(const Attrs& a, const std::vector<runtime_extents>& in, const std::string& who) {
    if (in.at(0).size() != in.at(1).size())
      throw shape_error(who + ": g of rank " + std::to_string(in[0].size()) + " for a value of rank " +
                        std::to_string(in[1].size()));
    pad_detail::padded_extents(who, runtime_extents(in[1].size(), 1 << 20), a.integers("pads"),
                               std::size_t(a.integer("mode")));
    return in.at(1);
  }
  template <class Attrs>
  static void run_runtime(const Attrs& a, const runtime_array& out, const std::vector<runtime_array>& in) {
    check(std::string(name), in[0].extents, out.extents, a.integers("pads"), std::size_t(a.integer("mode")));
    with_float_element(out.type, name, [&](auto zero) {
      using T = decltype(zero);
      run_on<T>(static_cast<const T*>(in[0].data), out.as<T>(), in[0].extents, out.extents, a.integers("pads"),
                std::size_t(a.integer("mode")));
    });
  }
  template <class Y, class TG, class TL, class G, class L>
  static auto tangent(const Y&, const TG& tg, const TL&, const G&, const L& like) {
    if constexpr (is_no_gradient_v<TG>) return no_gradient{};
    else return make_kernel(pad_backward_op{}, source_site{}, tg, like);
  }
  // Derivative rule (expr/derivative_rule.hpp): linear in g, whose adjoint is pad of the incoming
  // adjoint; like supplies extents only.
  static auto derivative(const auto& self, const auto& a, const auto&, const auto&, const auto&) {
    return tuple_of(apply_kernel(sibling<pad_op>(self), a), no_gradient{});
  }
};
}  // namespace ops

namespace pad_detail {
template <std::size_t Mode, std::size_t... Pads, class X>
auto make(const X& x, source_site where) {
  constexpr std::size_t rank = shape_of<X>::rank;
  static_assert(sizeof...(Pads) == 2 * rank,
                "symflow: pad: give a begin pad for every axis, then an end pad for every axis (2 x rank numbers)");
  static_assert(sizeof...(Pads) != 2 * rank || ops::pad_op<Mode, Pads...>::template shapes_ok<shape_of<X>>,
                "symflow: pad: reflect padding needs each pad shorter than its axis; edge padding an axis with "
                "an element");
  if constexpr (sizeof...(Pads) == 2 * rank) return make_kernel(ops::pad_op<Mode, Pads...>{}, where, x);
}
}  // namespace pad_detail

// pad<b0, ..., e0, ...>(x): zeros around x (begin pads of every axis, then end pads, as ONNX).
template <std::size_t... Pads, expression X>
auto pad(const X& x, source_site where = source_site::current()) {
  return pad_detail::make<0, Pads...>(x, where);
}
// pad<...>(x, value): `value` (a number or a scalar expression) around x: where over the padded
// mask, so the border is exactly value and the interior exactly x; value gets the border's gradient.
template <std::size_t... Pads, expression X, class V>
  requires(!std::is_same_v<std::remove_cvref_t<V>, source_site>)
auto pad(const X& x, const V& value, source_site where = source_site::current()) {
  const auto inside = pad_detail::make<0, Pads...>(expand_as(one<bool>{}, x), where);
  return symflow::where(inside, pad_detail::make<0, Pads...>(x, where), value);
}
// pad<pad_mode::reflect, ...>(x), pad<pad_mode::edge, ...>(x).
template <pad_mode Mode, std::size_t... Pads, expression X>
auto pad(const X& x, source_site where = source_site::current()) {
  return pad_detail::make<std::size_t(Mode), Pads...>(x, where);
}
}  // namespace symflow
#endif  // SYMFLOW_OPS_PAD_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(kernel, pad_op<0, 0, 0>)
SYMFLOW_LISTED(kernel, pad_backward_op<0, 0, 0>)
#endif
