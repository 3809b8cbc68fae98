#pragma once
#include <tuple>
#include <type_traits>
#include <vector>

#include "../expr/scope.hpp"
#include "gradient.hpp"

namespace symflow {

namespace detail {

// Forward accumulation: the tangent of e given the tangent t of the leaf. Elementwise ops reuse
// their reverse rule: it is linear in the adjoint, so the rule applied to g = 1 gives the partial
// derivatives. Ops for which that does not hold (cast, expand_as, kernels, max/min) carry a
// tangent rule of their own.
template <class Leaf, class E, class T>
auto tangent_of(const E& e, const T& t) {
  if constexpr (!depends_on<Leaf, E>()) {
    return no_gradient{};
  } else if constexpr (std::is_same_v<E, Leaf>) {
    return t;
  } else if constexpr (E::kind == node_kind::reference) {
    return tangent_of<Leaf>(std::get<0>(e.args()), t);  // the tangent of the value it stands for
  } else if constexpr (E::kind == node_kind::accumulation) {
    // The sum of the terms' tangents: as many terms, of one type.
    using term_tangent = decltype(tangent_of<Leaf>(std::declval<const typename E::term_type&>(), t));
    if constexpr (is_no_gradient_v<term_tangent>) {
      return no_gradient{};
    } else {
      std::vector<term_tangent> terms;
      terms.reserve(e.items().size());
      for (const auto& term : e.items()) terms.push_back(tangent_of<Leaf>(term, t));
      return accumulate_terms(std::move(terms));
    }
  } else if constexpr (E::kind == node_kind::reduction) {
    using Op = typename E::op_type;
    const auto& x = std::get<0>(e.args());
    const auto tx = tangent_of<Leaf>(x, t);
    if constexpr (is_no_gradient_v<decltype(tx)>) {
      return no_gradient{};
    } else {
      const auto operand = [&] {
        if constexpr (requires { Op::linear; }) return expand_as(tx, x);
        else return expand_as(Op::tangent_operand(tx, expanded<removed_axes<E>()>(e), x, over_reduced_axes<reduced_bits<E>()>{}), x);
      }();
      using reduce_op = std::conditional_t<requires { Op::linear; }, Op, ops::sum_op>;
      return reduction<reduce_op, std::remove_cvref_t<decltype(operand)>, reduced_bits<E>(), E::keep_dims>{
          {}, tuple_of(operand), {}};
    }
  } else if constexpr (E::kind == node_kind::view) {
    const auto& x = std::get<0>(e.args());
    const auto tx = tangent_of<Leaf>(x, t);
    if constexpr (is_no_gradient_v<decltype(tx)>) return no_gradient{};
    else {
      const auto operand = expand_as(tx, x);  // the view needs the operand's own shape
      return view_node<typename E::op_type, std::remove_cvref_t<decltype(operand)>>{{}, operands_of_values(operand), e.op, {}};
    }
  } else if constexpr (requires { e.op.tangent(e, tangent_of<Leaf>(std::get<0>(e.args()), t)); } ||
                       E::kind == node_kind::kernel ||
                       requires { &E::op_type::template tangent<E>; }) {
    return std::apply([&](const auto&... a) { return e.op.tangent(e, tangent_of<Leaf>(a, t)..., a...); }, e.args());
  } else {
    static_assert(E::kind == node_kind::elementwise);
    const auto partials = std::apply(
        [&](const auto&... a) { return e.op.gradient(one<value_type_of<E>>{}, e, a...); }, e.args());
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return accumulate_all(no_gradient{}, [&] {
        const auto& arg = std::get<I>(e.args());
        const auto& partial = std::get<I>(partials);
        using P = std::remove_cvref_t<decltype(partial)>;
        if constexpr (depends_on<Leaf, std::remove_cvref_t<decltype(arg)>>() && !is_no_gradient_v<P>) {
          const auto ta = tangent_of<Leaf>(arg, t);
          if constexpr (is_no_gradient_v<decltype(ta)>) return no_gradient{};
          else return simplify(partial * ta);
        } else {
          return no_gradient{};
        }
      }()...);
    }(std::make_index_sequence<std::tuple_size_v<operands_of<decltype(e)>>>{});
  }
}
}  // namespace detail

// jvp(f, x, v): the directional derivative of f at x along v (same shape as x), shaped like f.
template <expression E, expression Leaf, class Tangent>
auto jvp(const E& f, const Leaf& /*x: its type names the leaf*/, const Tangent& tangent) {
  static_assert(detail::differentiable_leaf<Leaf>::value,
                "symflow: jvp differentiates with respect to floating-point placeholders and variables only");
  name_scope s("jvp");
  const auto t = as_expression<value_type_of<Leaf>>(tangent);
  auto result = simplify(detail::tangent_of<Leaf>(f, t));
  if constexpr (is_no_gradient_v<decltype(result)>) return expand_as(zero<value_type_of<E>>{}, f);
  else return detail::keep_shape(f, result);
}

// d(f, x): df/dx for a scalar x (the tangent 1); for a tensor x, the sum of the partials along all
// of x's elements.
template <expression E, expression Leaf>
auto d(const E& f, const Leaf& leaf) {
  return jvp(f, leaf, one<value_type_of<Leaf>>{});
}

// Hessian-vector product H v of a scalar f with respect to x, by differentiating a gradient.
template <expression E, expression Leaf, expression V>
auto hvp(const E& f, const Leaf& x, const V& v) {
  return grad(sum(grad(f, x) * v), x);
}

}  // namespace symflow
