#pragma once
#include <tuple>
#include <type_traits>

#include "../expr/elementwise.hpp"
#include "../expr/reduction.hpp"
#include "../expr/rewrite.hpp"
#include "../expr/structural.hpp"
#include "../ops/add.hpp"
#include "../ops/expand_as.hpp"
#include "traits.hpp"

namespace symflow {

template <class E>
auto simplify(const E& e);

namespace detail {

// Builds an elementwise node, first offering the op its own rewrite rules.
template <class Op, class... A>
auto build_elementwise(const Op& op, const node_info& info, const A&... a) {
  if constexpr (requires { op.simplify(a...); }) {
    auto rewritten = op.simplify(a...);
    if constexpr (!std::is_same_v<decltype(rewritten), no_rewrite>)
      return simplify(rewritten);
    else
      return elementwise<Op, A...>{{}, operands_of_values(a...), op, info};
  } else {
    return elementwise<Op, A...>{{}, operands_of_values(a...), op, info};
  }
}

// A simplified operand that lost its shape (x * 0 -> 0) gets it back where the parent needs it:
// reductions, views and kernels do not broadcast. The original is kept for its extents only.
template <class Original, class Simplified>
auto keep_shape(const Original& original, const Simplified& s) {
  if constexpr (std::is_same_v<shape_of<Original>, shape_of<Simplified>>) return s;
  else return expand_as(s, original);
}

template <class Op, class A, unsigned Bits, bool Keep, class A2>
auto rebuild(const reduction<Op, A, Bits, Keep>& e, const A2& a) {
  if constexpr (is_zero_v<A2>) return a;
  else {
    auto operand = keep_shape(std::get<0>(e.args()), a);
    return reduction<Op, decltype(operand), Bits, Keep>{{}, operands_of_values(operand), e.info};
  }
}
template <class Op, class A, class A2>
auto rebuild(const view_node<Op, A>& e, const A2& a) {
  auto operand = keep_shape(std::get<0>(e.args()), a);
  return view_node<Op, decltype(operand)>{{}, operands_of_values(operand), e.op, e.info};
}
template <class Op, class... A, class... A2>
auto rebuild(const kernel_node<Op, A...>& e, const A2&... a) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    auto operands = tuple_of(keep_shape(std::get<I>(e.args()), a)...);
    return std::apply(
        [&](const auto&... o) { return kernel_node<Op, std::remove_cvref_t<decltype(o)>...>{{}, operands_of_values(o...), e.op, e.info}; },
        operands);
  }(std::index_sequence_for<A...>{});
}
template <class Op, class... A, class... A2>
auto rebuild(const elementwise<Op, A...>& e, const A2&... a) {
  return build_elementwise(e.op, e.info, a...);
}

template <class E>
auto simplify_tree(const E& e) {
  if constexpr (is_no_gradient_v<E> || !has_operands<E>) {
    return e;
  } else if constexpr (E::kind == node_kind::reference || requires { E::op_type::materialises; }) {
    return e;  // a stored value (the reverse sweep's): its identity is what its readers share
  } else {
    return std::apply([&](const auto&... a) { return rebuild(e, simplify_tree(a)...); }, e.args());
  }
}
}  // namespace detail

// Applies the ops' rewrite rules bottom-up: x*0 -> 0, x*1 -> x, x+0 -> x, x-x -> 0, -(-x) -> x,
// literal folding, x+x -> 2x, c*a + c*b -> c*(a+b), log(exp x) -> x, exp(log x) -> x where x >= 0.
// The result has the same value, dtype and shape as e (a root that lost its shape is broadcast back).
template <class E>
auto simplify(const E& e) {
  if constexpr (is_no_gradient_v<E>) {
    return e;
  } else {
    return detail::keep_shape(e, detail::simplify_tree(e));
  }
}

template <class A, class B>
auto simplified_add(const A& a, const B& b) {
  return detail::build_elementwise(ops::add_op{}, node_info{}, a, b);
}

}  // namespace symflow
