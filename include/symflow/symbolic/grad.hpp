#pragma once
#include <tuple>
#include <type_traits>

#include "../expr/derivative_rule.hpp"
#include "../expr/rewrite.hpp"
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
      return sum_to<Target>(reduction<ops::sum_op, G, lead, false>{{}, operands_of_values(g), {}});
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
      else return reduction<ops::sum_op, G, ones, true>{{}, operands_of_values(g), {}};
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

template <class X>
auto maybe_simplify(const X& x, std::true_type) {
  return simplify(x);
}
template <class X>
auto maybe_simplify(const X& x, std::false_type) {
  return x;
}

template <class... T>
struct type_list {};
template <class X, class List>
inline constexpr bool in_list = false;
template <class X, class... T>
inline constexpr bool in_list<X, type_list<T...>> = (std::is_same_v<X, T> || ...);
// The position of X in List (the list's length when X is not in it).
template <class X, class List>
struct index_in;
template <class X, class... T>
struct index_in<X, type_list<T...>> {
  static constexpr std::size_t value = [] {
    constexpr bool same[] = {std::is_same_v<X, T>..., false};
    std::size_t i = 0;
    while (i < sizeof...(T) && !same[i]) ++i;
    return i;
  }();
};

// The adjoint g of node e flowing down to every occurrence of Target: by the op's own rule to the
// operands, summed back over broadcast axes, accumulated where Target is reached. Nodes listed in
// Stops are not entered: their adjoints are gathered from all their uses first (see
// gradient_wrt), so a subexpression used k times is differentiated through once, not k times.
template <class Target, class Stops, bool Simplify, class E, class G>
auto backprop(const E& e, const G& g);

template <class Target, class Stops, bool Simplify, class E, class G>
auto backprop_operands(const E& e, const G& g) {
  constexpr std::bool_constant<Simplify> simplifying{};
  if constexpr (E::kind == node_kind::reduction) {
    constexpr unsigned removed = removed_axes<E>();
    const auto& x = std::get<0>(e.args());
    const auto adjoints = E::op_type::gradient(expanded<removed>(g), expanded<removed>(e), x,
                                               reduced_count<reduced_bits<E>(), value_type_of<E>>(x),
                                               over_reduced_axes<reduced_bits<E>()>{});
    return backprop<Target, Stops, Simplify>(x, sum_to<shape_of<decltype(x)>>(maybe_simplify(std::get<0>(adjoints), simplifying)));
  } else if constexpr (E::kind == node_kind::view) {
    const auto& x = std::get<0>(e.args());
    return backprop<Target, Stops, Simplify>(x, maybe_simplify(std::get<0>(op_derivative(e.op, full_shape(g, e), e, x)), simplifying));
  } else {
    static_assert(E::kind == node_kind::elementwise || E::kind == node_kind::kernel);
    // Views and kernels need the adjoint in their own full shape; elementwise rules broadcast.
    const auto adjoints = std::apply(
        [&](const auto&... a) {
          if constexpr (E::kind == node_kind::kernel) return op_derivative(e.op, full_shape(g, e), e, a...);
          else return e.op.gradient(g, e, a...);
        },
        e.args());
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      auto total = no_gradient{};
      return accumulate_all<Simplify>(total, [&] {
        const auto& arg = std::get<I>(e.args());
        using A = std::remove_cvref_t<decltype(arg)>;
        if constexpr (depends_on<Target, A>()) {
          if constexpr (E::kind == node_kind::elementwise)
            return backprop<Target, Stops, Simplify>(arg, sum_to<shape_of<A>>(maybe_simplify(std::get<I>(adjoints), simplifying)));
          else
            return backprop<Target, Stops, Simplify>(arg, maybe_simplify(std::get<I>(adjoints), simplifying));
        } else {
          return no_gradient{};
        }
      }()...);
    }(std::make_index_sequence<std::tuple_size_v<operands_of<decltype(e)>>>{});
  }
}

template <class Target, class Stops, bool Simplify, class E, class G>
auto backprop(const E& e, const G& g) {
  if constexpr (is_no_gradient_v<G> || !depends_on<Target, E>()) return no_gradient{};
  else if constexpr (std::is_same_v<E, Target>) return g;
  else if constexpr (in_list<E, Stops>) return no_gradient{};
  else return backprop_operands<Target, Stops, Simplify>(e, g);
}

// --- Subexpressions used more than once ---
//
// A type-determined node type (no literal values, constants or op attributes: is_type_determined)
// that occurs several times in the loss is one value used several times. Its adjoint is the sum of
// what reaches each use; it is gathered first and then sent down once. Ancestors come before
// descendants (the reverse of a post-order), so every use's contribution is in a node's adjoint
// before that adjoint moves on. Nodes whose occurrences may differ in value (a literal 2.0 here,
// 3.0 there; dropout seeds) are differentiated path by path, as a tree.

template <class List, class X>
struct append_unique;
template <class... T, class X>
struct append_unique<type_list<T...>, X> {
  using type = std::conditional_t<in_list<X, type_list<T...>>, type_list<T...>, type_list<T..., X>>;
};

// Node types of E in post-order, each once.
template <class List, class E>
struct post_order;
template <class List, class E, class Operands>
struct post_order_operands;
template <class List, class E>
struct post_order_operands<List, E, std::tuple<>> {
  using type = List;
};
template <class List, class E, class A, class... Rest>
struct post_order_operands<List, E, std::tuple<A, Rest...>> {
  using type = typename post_order_operands<typename post_order<List, A>::type, E, std::tuple<Rest...>>::type;
};
template <class List, class E, bool = (std::tuple_size_v<operands_of<E>> > 0)>
struct operands_post_order {
  using type = List;
};
template <class List, class E>
struct operands_post_order<List, E, true> {
  using type = typename post_order_operands<List, E, operands_of<E>>::type;
};
// A node already listed is not entered again: its operands were listed before it. (Without this the
// walk, and the number of (List, E) pairs the compiler instantiates, grows with the number of
// paths, exponentially in the depth of a model whose subexpressions are shared.)
template <class List, class E, bool Listed = in_list<E, List>>
struct post_order_step {
  using type = List;
};
template <class List, class E>
struct post_order_step<List, E, false> {
  using type = typename append_unique<typename operands_post_order<List, E>::type, E>::type;
};
template <class List, class E>
struct post_order {
  using type = typename post_order_step<List, E>::type;
};

// The node types of a type list for which Keep<X>::value holds, in order.
template <template <class> class Keep, class List, class Out = type_list<>>
struct kept_nodes;
template <template <class> class Keep, class... Out>
struct kept_nodes<Keep, type_list<>, type_list<Out...>> {
  using type = type_list<Out...>;
};
template <template <class> class Keep, class X, class... Rest, class... Out>
struct kept_nodes<Keep, type_list<X, Rest...>, type_list<Out...>> {
  using type = typename kept_nodes<Keep, type_list<Rest...>,
                                   std::conditional_t<Keep<X>::value, type_list<Out..., X>, type_list<Out...>>>::type;
};
// The node types of E, each once, in post-order, for which Keep<X>::value holds: its leaves, its
// variables, ...
template <template <class> class Keep, class E>
using nodes_where_t = typename kept_nodes<Keep, typename post_order<type_list<>, E>::type>::type;

template <class E>
struct is_leaf_node : std::bool_constant<E::kind == node_kind::placeholder || E::kind == node_kind::variable> {};
template <class E>
struct is_variable_node : std::bool_constant<E::kind == node_kind::variable> {};

// A type_list's types as a std::tuple (of default-constructed objects, for leaves).
template <class List>
struct tuple_of_list;
template <class... T>
struct tuple_of_list<type_list<T...>> {
  using type = std::tuple<T...>;
};

// The shared nodes of Loss on the way to Leaf, ancestors first.
template <class Leaf, class Loss, class PostOrder, class Out = type_list<>>
struct shared_nodes;
template <class Leaf, class Loss, class... Out>
struct shared_nodes<Leaf, Loss, type_list<>, type_list<Out...>> {
  using type = type_list<Out...>;
};
template <class Leaf, class Loss, class X, class... Rest, class... Out>
struct shared_nodes<Leaf, Loss, type_list<X, Rest...>, type_list<Out...>> {
  static constexpr bool shared = has_operands<X> && !std::is_same_v<X, Leaf> && is_type_determined<X>() &&
                                 depends_on<Leaf, X>() && occurrences<X, Loss>() > 1;
  using type = typename shared_nodes<Leaf, Loss, type_list<Rest...>,
                                     std::conditional_t<shared, type_list<X, Out...>, type_list<Out...>>>::type;
};

// The first occurrence of node type X in e (a shared node is type-determined: every occurrence has
// the same value).
template <class X, class E>
const X* find_node(const E& e) {
  if constexpr (std::is_same_v<E, X>) {
    return &e;
  } else if constexpr (has_operands<E>) {
    const X* found = nullptr;
    std::apply([&](const auto&... a) { ((found = found ? found : find_node<X>(a)), ...); }, e.args());
    return found;
  } else {
    return nullptr;
  }
}

// What reaches Target: from the loss's root, and from each shared node already gathered (its
// adjoint sent down through its operands).
template <class Target, class Stops, bool Simplify, class Loss, class... Done, class... Adjoints>
auto gathered_adjoint(const Loss& loss, type_list<Done...>, const std::tuple<Adjoints...>& adjoints) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return accumulate_all<Simplify>(
        backprop<Target, Stops, Simplify>(loss, one<value_type_of<Loss>>{}),
        [&] {
          using D = std::tuple_element_t<I, std::tuple<Done...>>;
          if constexpr (depends_on<Target, D>())
            return backprop_operands<Target, Stops, Simplify>(*find_node<D>(loss), std::get<I>(adjoints));
          else
            return no_gradient{};
        }()...);
  }(std::index_sequence_for<Done...>{});
}

template <class Stops, bool Simplify, class Loss, class... Done, class... Adjoints>
auto shared_adjoints(const Loss&, type_list<>, type_list<Done...>, const std::tuple<Adjoints...>& adjoints) {
  return adjoints;
}
template <class Stops, bool Simplify, class Loss, class S, class... Rest, class... Done, class... Adjoints>
auto shared_adjoints(const Loss& loss, type_list<S, Rest...>, type_list<Done...> done,
                     const std::tuple<Adjoints...>& adjoints) {
  auto adjoint = maybe_simplify(gathered_adjoint<S, Stops, Simplify>(loss, done, adjoints), std::bool_constant<Simplify>{});
  return shared_adjoints<Stops, Simplify>(loss, type_list<Rest...>{}, type_list<Done..., S>{},
                                          std::tuple_cat(adjoints, std::tuple{adjoint}));
}

// The adjoint of the loss with respect to Leaf (no_gradient when the loss does not depend on it).
template <class Leaf, bool Simplify, class Loss>
auto leaf_adjoint(const Loss& loss) {
  using shared = typename shared_nodes<Leaf, Loss, typename post_order<type_list<>, Loss>::type>::type;
  const auto adjoints = shared_adjoints<shared, Simplify>(loss, shared{}, type_list<>{}, std::tuple<>{});
  return gathered_adjoint<Leaf, shared, Simplify>(loss, shared{}, adjoints);
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
  auto g = maybe_simplify(leaf_adjoint<Leaf, Simplify>(loss), std::bool_constant<Simplify>{});
  if constexpr (is_no_gradient_v<decltype(g)>) {
    return expand_as(zero<T>{}, leaf);
  } else if constexpr (!std::is_same_v<shape_of<decltype(g)>, shape_of<Leaf>>) {
    return expand_as(g, leaf);
  } else {
    return g;
  }
}
}  // namespace detail

// The gradients by walking the loss's paths down to each leaf (see backprop): each adjoint fused
// into its user's loop and simplified. symbolic/gradient.hpp's grad picks this or the reverse sweep.
template <expression E, expression... Leaves>
auto grad_by_paths(const E& loss, const Leaves&... leaves) {
  static_assert(detail::differentiated_expression_is_scalar<E>::value,
                "symflow: grad differentiates a scalar (rank-0) expression; reduce it first, e.g. sum(e)");
  name_scope s("grad");
  if constexpr (sizeof...(Leaves) == 1) return detail::gradient_wrt(loss, leaves...);
  else return tuple_of(detail::gradient_wrt(loss, leaves)...);
}

// grad without any simplification (to measure what simplification saves).
template <expression E, expression... Leaves>
auto grad_unsimplified(const E& loss, const Leaves&... leaves) {
  static_assert(detail::differentiated_expression_is_scalar<E>::value,
                "symflow: grad differentiates a scalar (rank-0) expression; reduce it first, e.g. sum(e)");
  name_scope s("grad");
  if constexpr (sizeof...(Leaves) == 1) return detail::gradient_wrt<false>(loss, leaves...);
  else return tuple_of(detail::gradient_wrt<false>(loss, leaves)...);
}

}  // namespace symflow
