#pragma once
// Evaluating elementwise expressions into memory they also read: an optimiser's new moments and
// new parameter written over the old ones, in one pass.
//
// eval_into writes into tensors it may reallocate; a parameter lives in a params store, so the
// outputs here are views of existing memory. Writing an output that an expression reads is safe
// only when every element of every output is computed from the same element of its inputs, before
// that element is stored. The CPU evaluator's one-pass group (eval/cpu/multi_output.hpp) does exactly
// that: per element (or SIMD packet) all outputs are computed first, then stored; threads take
// disjoint ranges. It is used only for elementwise outputs over one frame, so this function
// demands both: elementwise roots at compile time, equal extents at run time. Evaluated one after
// another instead, the first output stored would change what the later ones read.
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../core/error.hpp"
#include "../core/tensor.hpp"
#include "../eval/cpu/eval.hpp"

namespace symflow {

namespace detail {
template <class View>
inline constexpr bool is_mutable_view_v = false;
template <class T, shape_spec S>
inline constexpr bool is_mutable_view_v<tensor_view<T, S>> = !std::is_const_v<T>;
}  // namespace detail

// fused_update(std::tie(m_view, w_view), m_expr, w_expr, feeds...): one output view per expression,
// followed by the feeds (and at most one params store) the expressions read.
template <class... Views, expression E1, class... Rest>
void fused_update(std::tuple<Views...> outputs, const E1& e1, const Rest&... rest) {
  constexpr std::size_t k = sizeof...(Views);
  static_assert(k >= 1 && k <= 1 + sizeof...(Rest), "symflow: fused_update needs one output view per expression");
  static_assert((detail::is_mutable_view_v<std::remove_cvref_t<Views>> && ...),
                "symflow: fused_update writes into tensor_views of mutable elements");
  const auto args = tie_plain(e1, rest...);  // not std::tie: see core/plain_tuple.hpp
  using all = std::tuple<E1, Rest...>;
  [&]<std::size_t... X, std::size_t... S>(std::index_sequence<X...>, std::index_sequence<S...>) {
    static_assert((expression<std::tuple_element_t<X, all>> && ...),
                  "symflow: fused_update takes as many expressions as output views");
    cpu::outputs_context<std::tuple<std::remove_cvref_t<std::tuple_element_t<X, all>>...>,
                        std::remove_cvref_t<std::tuple_element_t<k + S, all>>...>
        ctx(get<k + S>(args)...);
    auto evaluators_memory = cpu::evaluators_in_place(std::index_sequence<X...>{}, args, ctx);
    auto& evaluators = *evaluators_memory;
    using plan = cpu::one_pass_plan<std::remove_cvref_t<decltype(get<X>(evaluators))>...>;
    static_assert((cpu::is_elementwise_eval_v<std::remove_cvref_t<decltype(get<X>(evaluators))>> && ...),
                  "symflow: every expression of a fused update must be elementwise at its root");
    static_assert(k == 1 || plan::size == k,
                  "symflow: the expressions of a fused update must share one floating-point dtype");
    (
        [&] {
          using View = std::remove_cvref_t<std::tuple_element_t<X, std::tuple<Views...>>>;
          using Expr = std::tuple_element_t<X, all>;
          static_assert(std::is_same_v<typename View::value_type, value_type_of<Expr>> && View::rank == Expr::rank,
                        "symflow: an output view's dtype or rank does not match its expression");
          const auto& view = std::get<X>(outputs);
          const auto& ev = get<X>(evaluators);
          const auto& first = get<0>(evaluators);
          bool same = view.is_contiguous() && view.extents() == ev.extents;
          if constexpr (std::tuple_size_v<std::remove_cvref_t<decltype(first.extents)>> == View::rank)
            same = same && ev.extents == first.extents;
          else
            same = false;
          if (!same)
            throw shape_error("fused_update: output " + std::to_string(X) + " has extents " +
                              format_extents(view.extents()) + (view.is_contiguous() ? "" : " (not contiguous)") +
                              "; every output must be contiguous with the extents of every expression");
        }(),
        ...);
    cpu::compute_outputs(evaluators, ctx, outputs);
  }(std::make_index_sequence<k>{}, std::make_index_sequence<sizeof...(Rest) + 1 - k>{});
}

}  // namespace symflow
