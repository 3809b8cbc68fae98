#pragma once
#include <tuple>
#include <type_traits>

#include "../expr/scope.hpp"
#include "../ops/all.hpp"
#include "simplify.hpp"
#include "traits.hpp"

namespace symflow {

// Sums an adjoint over the axes along which an operand of shape Target was broadcast, so the result
// broadcasts back onto the operand: leading axes the operand lacks are summed away; axes where the
// operand has extent 1 are summed with keepdims. Decided from static shapes (a dyn extent is taken
// as not broadcast).
template <shape_spec Target, class G>
auto sum_to(const G& g) {
  if constexpr (is_no_gradient_v<G>) {
    return g;
  } else {
    using GS = shape_of<G>;
    if constexpr (GS::rank > Target::rank) {
      constexpr unsigned lead = (1u << (GS::rank - Target::rank)) - 1;
      return sum_to<Target>(reduction<ops::sum_op, G, lead, false>{{}, std::tuple<G>(g), {}});
    } else {
      constexpr unsigned ones = [] {
        unsigned bits = 0;
        for (std::size_t i = 0; i < GS::rank; ++i) {
          const std::size_t t = Target::extents[Target::rank - GS::rank + i];
          if (t == 1 && GS::extents[i] != 1) bits |= 1u << i;
        }
        return bits;
      }();
      if constexpr (ones == 0) return g;
      else return reduction<ops::sum_op, G, ones, true>{{}, std::tuple<G>(g), {}};
    }
  }
}

namespace detail {

template <bool Simplify = true, class A, class B>
auto accumulate(const A& a, const B& b) {
  if constexpr (is_no_gradient_v<A>) return b;
  else if constexpr (is_no_gradient_v<B>) return a;
  else if constexpr (Simplify) return simplified_add(a, b);
  else return a + b;
}

template <bool Simplify = true, class Acc>
auto accumulate_all(const Acc& acc) {
  return acc;
}
template <bool Simplify = true, class Acc, class X, class... Rest>
auto accumulate_all(const Acc& acc, const X& x, const Rest&... rest) {
  return accumulate_all<Simplify>(accumulate<Simplify>(acc, x), rest...);
}

// An adjoint that arrives broadcastable (a scalar 1, a keepdims sum) stretched to e's shape.
template <class G, class E>
auto full_shape(const G& g, const E& e) {
  if constexpr (std::is_same_v<shape_of<G>, shape_of<E>>) return g;
  else return expand_as(g, e);
}

// Bits of the axes a reduction removed (0 if it kept them), for expanding its adjoint back.
template <class E>
constexpr unsigned removed_axes() {
  if constexpr (E::keep_dims) return 0;
  else {
    unsigned bits = 0;
    for (std::size_t i = 0; i < E::mask.size(); ++i)
      if (E::mask[i]) bits |= 1u << i;
    return bits;
  }
}
template <unsigned Bits, class X>
auto expanded(const X& x) {
  if constexpr (Bits == 0 || X::rank == 0) return x;  // a scalar broadcasts as it is
  else return expand_dims<Bits>(x);
}

template <class E>
constexpr unsigned reduced_bits() {
  unsigned bits = 0;
  for (std::size_t i = 0; i < E::mask.size(); ++i)
    if (E::mask[i]) bits |= 1u << i;
  return bits;
}

// Reverse accumulation: the adjoint g of node e flows to its operands by the op's own rule, is
// summed back over broadcast axes, and is accumulated where the leaf is reached.
template <class X>
auto maybe_simplify(const X& x, std::true_type) {
  return simplify(x);
}
template <class X>
auto maybe_simplify(const X& x, std::false_type) {
  return x;
}

template <class Leaf, bool Simplify = true, class E, class G>
auto backprop(const E& e, const G& g) {
  constexpr std::bool_constant<Simplify> simplifying{};
  if constexpr (is_no_gradient_v<G> || !depends_on<Leaf, E>()) {
    return no_gradient{};
  } else if constexpr (std::is_same_v<E, Leaf>) {
    return g;
  } else if constexpr (E::kind == node_kind::reduction) {
    constexpr unsigned removed = removed_axes<E>();
    const auto& x = std::get<0>(e.args);
    const auto adjoints = E::op_type::gradient(expanded<removed>(g), expanded<removed>(e), x,
                                               reduced_count<reduced_bits<E>(), value_type_of<E>>(x));
    return backprop<Leaf, Simplify>(x, sum_to<shape_of<decltype(x)>>(maybe_simplify(std::get<0>(adjoints), simplifying)));
  } else if constexpr (E::kind == node_kind::view) {
    const auto& x = std::get<0>(e.args);
    return backprop<Leaf, Simplify>(x, maybe_simplify(std::get<0>(e.op.gradient(full_shape(g, e), x)), simplifying));
  } else {
    static_assert(E::kind == node_kind::elementwise || E::kind == node_kind::kernel);
    // Views and kernels need the adjoint in their own full shape; elementwise rules broadcast.
    const auto adjoints = std::apply(
        [&](const auto&... a) {
          if constexpr (E::kind == node_kind::kernel) return e.op.gradient(full_shape(g, e), e, a...);
          else return e.op.gradient(g, e, a...);
        },
        e.args);
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      auto total = no_gradient{};
      return accumulate_all<Simplify>(total, [&] {
        const auto& arg = std::get<I>(e.args);
        using A = std::remove_cvref_t<decltype(arg)>;
        if constexpr (depends_on<Leaf, A>()) {
          if constexpr (E::kind == node_kind::elementwise)
            return backprop<Leaf, Simplify>(arg, sum_to<shape_of<A>>(maybe_simplify(std::get<I>(adjoints), simplifying)));
          else
            return backprop<Leaf, Simplify>(arg, maybe_simplify(std::get<I>(adjoints), simplifying));
        } else {
          return no_gradient{};
        }
      }()...);
    }(std::make_index_sequence<std::tuple_size_v<std::remove_cvref_t<decltype(e.args)>>>{});
  }
}

// Conditions of grad's static_asserts; their template arguments (the leaf, the expression) are
// what the compiler prints after the message.
template <class Leaf>
struct differentiable_leaf {
  static constexpr bool value = (Leaf::kind == node_kind::placeholder || Leaf::kind == node_kind::variable) &&
                                std::is_floating_point_v<typename Leaf::value_type>;
};
template <class E>
struct differentiated_expression_is_scalar {
  static constexpr bool value = E::rank == 0;
};

// The gradient of `loss` with respect to one leaf, shaped like the leaf.
template <bool Simplify = true, class E, class Leaf>
auto gradient_wrt(const E& loss, const Leaf& leaf) {
  static_assert(differentiable_leaf<Leaf>::value,
                "symflow: grad differentiates with respect to floating-point placeholders and variables "
                "only (leaf below)");
  using T = typename Leaf::value_type;
  auto g = maybe_simplify(backprop<Leaf, Simplify>(loss, one<value_type_of<E>>{}), std::bool_constant<Simplify>{});
  if constexpr (is_no_gradient_v<decltype(g)>) {
    return expand_as(zero<T>{}, leaf);
  } else if constexpr (!std::is_same_v<shape_of<decltype(g)>, shape_of<Leaf>>) {
    return expand_as(g, leaf);
  } else {
    return g;
  }
}
}  // namespace detail

// grad(loss, W, b): one gradient expression per leaf, each shaped like its leaf, derived from the
// ops' own derivative rules at compile time and simplified. Nothing is computed until evaluated.
template <expression E, expression... Leaves>
auto grad(const E& loss, const Leaves&... leaves) {
  static_assert(detail::differentiated_expression_is_scalar<E>::value,
                "symflow: grad differentiates a scalar (rank-0) expression; reduce it first, e.g. sum(e)");
  name_scope s("grad");
  if constexpr (sizeof...(Leaves) == 1) return detail::gradient_wrt(loss, leaves...);
  else return std::tuple{detail::gradient_wrt(loss, leaves)...};
}

// grad without any simplification (to measure what simplification saves).
template <expression E, expression... Leaves>
auto grad_unsimplified(const E& loss, const Leaves&... leaves) {
  static_assert(detail::differentiated_expression_is_scalar<E>::value,
                "symflow: grad differentiates a scalar (rank-0) expression; reduce it first, e.g. sum(e)");
  name_scope s("grad");
  if constexpr (sizeof...(Leaves) == 1) return detail::gradient_wrt<false>(loss, leaves...);
  else return std::tuple{detail::gradient_wrt<false>(loss, leaves)...};
}

}  // namespace symflow
