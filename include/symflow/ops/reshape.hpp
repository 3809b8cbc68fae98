#ifndef SYMFLOW_OPS_RESHAPE_HPP
#define SYMFLOW_OPS_RESHAPE_HPP
#include <optional>
#include <vector>
#include "../expr/derivative_rule.hpp"
#include "../expr/structural.hpp"
#include "../expr/runtime_forms.hpp"
#include "law_example.hpp"
#include "reshape_as.hpp"
#include "../expr/onnx_form.hpp"

namespace symflow {
namespace ops {

// Gives a contiguous operand new extents with the same element count. At most one target extent
// may be dyn: it is inferred from the count at run time.
template <shape_spec Target>
struct reshape_op {
  static constexpr std::string_view name = "reshape";
  // ONNX Reshape; allowzero: a target extent 0 means 0 (ONNX's default copies the operand's).
  static void write_onnx(onnx_node_writer& w) {
    w.add("Reshape", {w.operand(0), w.int64s(w.integers("shape"))}, {{"allowzero", std::int64_t(1)}}, true);
  }
  // ONNX Reshape: 0 copies the operand's extent unless allowzero, -1 is inferred (the op's rule).
  static constexpr std::array<std::string_view, 1> onnx_reads{"Reshape"};
  static void read_onnx(onnx_node_reader& r) {
    // Reshape(x, Shape(like)) over extents known only at run time, as reshape_as's form writes it
    // (with allowzero, a 0 in like's shape is an extent 0, as reshape_as takes it).
    if (const auto like = r.shape_source_of(1); like && r.integer("allowzero", 0) != 0)
      return r.result(r.apply(reshape_as_op::name, {r.input(0), *like}));
    std::vector<std::int64_t> target = r.constant_integers(1);
    const std::vector<std::int64_t> in = r.extents_of(r.input(0));
    if (r.integer("allowzero", 0) == 0)
      for (std::size_t a = 0; a < target.size(); ++a)
        if (target[a] == 0) {
          if (a >= in.size() || in[a] < 0) r.refuse("a 0 in the target shape copies an extent that is not known");
          target[a] = in[a];
        }
    r.result(r.apply(name, {r.input(0)}, {{"shape", target}}));
  }
  static constexpr std::string_view doc =
      "reshape(x), attribute shape: the same elements, in row-major order, with new extents; the "
      "element count must not change (a shape error otherwise). At most one target extent may be "
      "unknown (-1 in a graph, dyn in C++, reshape<shape<dyn, 4>>(x)); it is inferred from the element "
      "count. Values keep their bits; any dtype. flatten(x) is the reshape to [extent 0, product of "
      "the others]. Gradient: g reshaped back to the operand's shape (a view), or reshape_as(g, x) "
      "(a copy) when that shape has more than one unknown extent. Example: reshape to [3, -1] of x = [1, 2, 3, 4, 5, 6] is [[1, 2], [3, 4], [5, "
      "6]].";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<dyn, 37>>>;
    template <class T>
    static auto of(const auto& x0) { return reshape<shape<dyn, 3>>(x0); }
  };
  static constexpr bool contiguous_operand = true;
  // Attributes for the graph value (graph/): the target extents, dyn where inferred.
  template <class V>
  static void visit_attributes(V&& v) {
    v("shape", Target::extents);
  }

  // constexpr, not consteval: clang 14 (the fuzz build's compiler) rejects a consteval call from the
  // class's own static member initializer below.
  static constexpr std::size_t dyn_count() {
    std::size_t n = 0;
    for (auto e : Target::extents) n += e == dyn;
    return n;
  }
  template <class S>
  static constexpr bool shapes_ok = [] {
    if (dyn_count() > 1) return false;
    if constexpr (S::is_static && Target::is_static) {
      std::size_t a = 1, b = 1;
      for (auto e : S::extents) a *= e;
      for (auto e : Target::extents) b *= e;
      return a == b;
    }
    return true;
  }();
  template <class S>
  using result_shape = Target;

  template <std::size_t R>
  static extents_t<Target::rank> infer_extents(const auto& who, const extents_t<R>& in) {
    const std::size_t count = element_count<R>(in);
    extents_t<Target::rank> out = Target::extents;
    std::size_t known = 1, hole = Target::rank;
    for (std::size_t i = 0; i < Target::rank; ++i) {
      if (out[i] == dyn) hole = i;
      else known *= out[i];
    }
    if (hole != Target::rank) out[hole] = known ? count / known : 0;
    if (element_count<Target::rank>(out) != count)
      throw shape_error(who + ": cannot reshape " + format_extents(in) + " (" + std::to_string(count) +
                        " elements) to " + shape_string<Target>());
    return out;
  }
  // Runtime form (graph interpreter and builder): the target shape is a value, -1 where inferred.
  // The operand is contiguous (the interpreter's values are).
  template <class Attrs>
  static runtime_layout runtime_view(const Attrs& a, const runtime_layout& in, const std::string& who) {
    const auto target = a.integers("shape");
    const std::size_t count = element_count(in.extents);
    runtime_extents out(target.size());
    std::size_t known = 1, holes = 0, hole = 0;
    for (std::size_t i = 0; i < target.size(); ++i) {
      if (target[i] < 0) {
        ++holes;
        hole = i;
      } else {
        out[i] = std::size_t(target[i]);
        known *= out[i];
      }
    }
    if (holes == 1) out[hole] = known ? count / known : 0;
    if (holes > 1 || element_count(out) != count)
      throw shape_error(who + ": cannot reshape " + format_extents(in.extents) + " (" + std::to_string(count) +
                        " elements) to " + format_extents(target));
    auto l = runtime_layout::contiguous(std::move(out));
    l.offset = in.offset;
    return l;
  }
  // Derivative rule (expr/derivative_rule.hpp): the adjoint reshaped back to the operand's shape:
  // a view when that shape has at most one unknown extent, else a copy with x's extents taken at
  // run time (reshape_as).
  static auto derivative(const auto&, const auto& g, const auto&, const auto& x) {
    return choose(
        lift(at_most_one_unknown{}, shape_value(x)), [](const auto& g, const auto& x) { return tuple_of(reshape(g, shape_value(x))); },
        [](const auto& g, const auto& x) { return tuple_of(apply_kernel(reshape_as_op{}, g, x)); }, g, x);
  }
  struct at_most_one_unknown {
    template <class List>
    constexpr bool operator()(const List& extents) const {
      std::size_t unknown = 0;
      for (std::size_t i = 0; i < extents.size(); ++i) unknown += extents[i] < 0;
      return unknown <= 1;
    }
  };
  template <std::size_t R>
  static layout<Target::rank> apply(const layout<R>& in) {
    layout<Target::rank> out;
    out.extents = infer_extents<R>(std::string("reshape"), in.extents);
    out.strides = row_major_strides<Target::rank>(out.extents);
    out.offset = in.offset;
    return out;
  }
};

template <class S>
consteval auto flattened_extents() {
  std::size_t rest = 1;
  for (std::size_t i = 1; i < S::rank; ++i) rest = (rest == dyn || S::extents[i] == dyn) ? dyn : rest * S::extents[i];
  return std::array<std::size_t, 2>{S::extents[0], rest};
}
}  // namespace ops

template <shape_spec Target, expression X>
auto reshape(const X& x, source_site where = source_site::current()) {
  return make_view(ops::reshape_op<Target>{}, where, x);
}

// Reshapes to extents known at compile time as a rule's attribute value (-1 for dyn; see
// expr/derivative_rule.hpp); reshape<shape<...>>(x) spells it in code.
template <expression X, integer_list Extents>
auto reshape(const X& x, fixed<Extents>) {
  constexpr std::size_t unknown = [] {
    std::size_t n = 0;
    for (std::size_t i = 0; i < Extents.size(); ++i) n += Extents[i] < 0;
    return n;
  }();
  static_assert(unknown <= 1, "symflow: reshape back to a shape with more than one dyn extent (the gradient of "
                              "reshape needs the operand's shape to have at most one)");
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return make_view(ops::reshape_op<shape<(Extents[I] < 0 ? dyn : std::size_t(Extents[I]))...>>{}, source_site{}, x);
  }(std::make_index_sequence<Extents.size()>{});
}

// Keeps axis 0 and merges the rest: [N, 7, 7, 64] -> [N, 3136].
template <expression X>
auto flatten(const X& x, source_site where = source_site::current()) {
  static_assert(rank_of<X> >= 1, "symflow: flatten needs an operand of rank 1 or more");
  using target = shape_from_array_t<ops::flattened_extents<shape_of<X>>()>;
  if constexpr (target::extents[0] == dyn && target::extents[1] == dyn)
    static_assert(rank_of<X> < 0, "symflow: flatten needs the trailing extents to be static when axis 0 is dyn");
  else
    return make_view(ops::reshape_op<target>{}, where, x);
}
}  // namespace symflow
#endif  // SYMFLOW_OPS_RESHAPE_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(view, reshape_op<shape<1>>)
#endif
