#ifndef SYMFLOW_OPS_TRANSPOSE_HPP
#define SYMFLOW_OPS_TRANSPOSE_HPP
#include <optional>
#include <vector>
#include "../expr/derivative_rule.hpp"
#include "../expr/structural.hpp"
#include "../expr/runtime_forms.hpp"
#include "law_example.hpp"
#include "../expr/onnx_form.hpp"

namespace symflow {
namespace ops {

// Reorders axes: result axis i is operand axis Perm[i]. A pure relabelling of strides: no copy.
template <std::size_t... Perm>
struct permute_op {
  static constexpr std::string_view name = "transpose";
  // ONNX Transpose, with the same perm.
  static void write_onnx(onnx_node_writer& w) {
    w.add("Transpose", {w.operand(0)}, {{"perm", w.integers("perm")}}, true);
  }
  static constexpr std::array<std::string_view, 1> onnx_reads{"Transpose"};
  static void read_onnx(onnx_node_reader& r) {  // ONNX's default perm reverses the axes
    const std::size_t rank = r.rank_of(0);
    std::vector<std::int64_t> reversed;
    for (std::size_t a = rank; a-- > 0;) reversed.push_back(std::int64_t(a));
    r.result(r.apply(name, {r.input(0)}, {{"perm", r.integers("perm", reversed)}}));
  }
  static constexpr std::string_view doc =
      "transpose(x), attribute perm: result axis i is operand axis perm[i], so result extent i is "
      "operand extent perm[i]; perm must be a permutation of 0..rank-1 (a shape error otherwise). A "
      "view: the strides are relabelled and nothing is copied, so values keep their bits (NaN "
      "payloads, -0); any dtype. In C++, permute<P...>(x) gives any permutation and transpose(x) swaps "
      "the last two axes of a rank-2 or rank-3 operand. Gradient: g transposed by the inverse "
      "permutation. Example: transpose of x = [[1, 2, 3], [4, 5, 6]] (perm [1, 0]) is [[1, 4], [2, 5], "
      "[3, 6]].";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<dyn, 37>>>;
    template <class T>
    static auto of(const auto& x0) { return permute<1, 0>(x0); }
  };
  static constexpr bool contiguous_operand = false;
  static constexpr std::array<std::size_t, sizeof...(Perm)> perm{Perm...};
  // Attributes for the graph value (graph/).
  template <class V>
  static constexpr void visit_attributes(V&& v) {
    v("perm", perm);
  }

  template <class S>
  static constexpr bool shapes_ok = [] {
    if constexpr (S::rank != sizeof...(Perm)) {
      return false;
    } else {
      std::array<bool, sizeof...(Perm)> seen{};
      for (std::size_t p : perm) {
        if (p >= S::rank || seen[p]) return false;
        seen[p] = true;
      }
      return true;
    }
  }();
  template <class S>
  using result_shape = shape<S::extents[Perm]...>;

  template <std::size_t R>
  static extents_t<R> infer_extents(const auto&, const extents_t<R>& e) {
    return {e[Perm]...};
  }
  // Runtime form (graph interpreter and builder): the permutation is a value.
  template <class Attrs>
  static runtime_layout runtime_view(const Attrs& a, const runtime_layout& in, const std::string& who) {
    const auto p = a.integers("perm");
    std::vector<bool> seen(in.extents.size());
    bool ok = p.size() == in.extents.size();
    for (std::size_t i = 0; ok && i < p.size(); ++i) {
      ok = p[i] >= 0 && std::size_t(p[i]) < seen.size() && !seen[std::size_t(p[i])];
      if (ok) seen[std::size_t(p[i])] = true;
    }
    if (!ok) throw shape_error(who + ": the permutation does not fit an operand of shape " + format_extents(in.extents));
    runtime_layout out{runtime_extents(p.size()), std::vector<std::size_t>(p.size()), in.offset};
    for (std::size_t i = 0; i < p.size(); ++i) {
      out.extents[i] = in.extents[std::size_t(p[i])];
      out.strides[i] = in.strides[std::size_t(p[i])];
    }
    return out;
  }
  // Derivative rule (expr/derivative_rule.hpp): the adjoint permuted back.
  static auto derivative(const auto& self, const auto& g, const auto&, const auto&) {
    return tuple_of(transpose(g, lift(inverse_permutation{}, integers<"perm">(self))));
  }
  struct inverse_permutation {
    template <class List>
    constexpr List operator()(List p) const {
      List out = p;
      for (std::size_t i = 0; i < p.size(); ++i) out[std::size_t(p[i])] = std::int64_t(i);
      return out;
    }
  };
  template <std::size_t R>
  static layout<R> apply(const layout<R>& in) {
    return {{in.extents[Perm]...}, {in.strides[Perm]...}, in.offset};
  }
};
}  // namespace ops

template <std::size_t... Perm, expression X>
auto permute(const X& x, source_site where = source_site::current()) {
  return make_view(ops::permute_op<Perm...>{}, where, x);
}

// Reorders axes by a permutation known at compile time, as a rule's attribute value (see
// expr/derivative_rule.hpp); permute<...>(x) spells it in code.
template <expression X, integer_list Perm>
auto transpose(const X& x, fixed<Perm>) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return make_view(ops::permute_op<std::size_t(Perm[I])...>{}, source_site{}, x);
  }(std::make_index_sequence<Perm.size()>{});
}

// Swaps the last two axes (a matrix transpose, batched for rank 3).
template <expression X>
auto transpose(const X& x, source_site where = source_site::current()) {
  static_assert(rank_of<X> == 2 || rank_of<X> == 3, "symflow: transpose takes a rank-2 or rank-3 operand");
  if constexpr (rank_of<X> == 2) return make_view(ops::permute_op<1, 0>{}, where, x);
  else return make_view(ops::permute_op<0, 2, 1>{}, where, x);
}
}  // namespace symflow
#endif  // SYMFLOW_OPS_TRANSPOSE_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(view, permute_op<0>)
#endif
