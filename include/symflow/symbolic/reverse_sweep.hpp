#pragma once
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../expr/accumulation.hpp"
#include "../expr/reference.hpp"
#include "../ops/hold.hpp"
#include "grad.hpp"

namespace symflow {
namespace detail::sweep {

// Reverse mode over the model as a graph of node objects. The forward expression's type lists each
// node type once (post_order); the run-time walk finds the node objects (a node type may have
// several objects: `0.5f * u` and `0.7f * u`). Every object gets one adjoint, the sum of what its
// users send back; each user sends, per operand, its op's derivative rule applied to stored values:
// its own value and its operands held (ops::hold_op), its adjoint read through a reference
// (expr/reference.hpp). A term's type therefore names the user's node type and a key for its
// adjoint, never the adjoint's own type, so no type nests the adjoints of the nodes above it:
// types grow with the number of node types and edges, not with paths or depth.

template <class... T, class... U>
constexpr auto operator+(type_list<T...>, type_list<U...>) {
  return type_list<T..., U...>{};
}

template <class Loss, class... Leaves>
struct spec {
  using loss_type = Loss;
  using nodes = typename post_order<type_list<>, Loss>::type;
  // Node types whose adjoint matters: those that depend on a leaf differentiated for.
  template <class E>
  static constexpr bool relevant = std::is_floating_point_v<value_type_of<E>> && in_list<E, nodes> &&
                                   (depends_on<Leaves, E>() || ...);
};

// What user c sends back to each operand, given its held adjoint g: a tuple with one entry per
// operand, no_gradient where none flows, summed over the axes along which the operand broadcast.
// (Helper functions, not lambdas: g++ 12 fails on generic lambdas in the decltype that names a
// term's type.)
template <class C, class Adjoints, std::size_t I>
auto shaped_term(const Adjoints& adjoints) {
  using A = std::remove_cvref_t<std::tuple_element_t<I, operands_of<C>>>;
  using Term = std::remove_cvref_t<std::tuple_element_t<I, Adjoints>>;
  if constexpr (is_no_gradient_v<Term>) return no_gradient{};
  else if constexpr (C::kind == node_kind::elementwise) return sum_to<shape_of<A>>(std::get<I>(adjoints));
  else return std::get<I>(adjoints);
}
template <class C, class G, class Y, std::size_t... I>
auto operand_rule(const C& c, const G& g, const Y& y, std::index_sequence<I...>) {
  if constexpr (C::kind == node_kind::kernel) {
    const auto adjoints = op_derivative(c.op, full_shape(g, y), y, hold(std::get<I>(c.args()))...);
    return tuple_of(shaped_term<C, std::remove_cvref_t<decltype(adjoints)>, I>(adjoints)...);
  } else {
    const auto adjoints = c.op.gradient(g, y, hold(std::get<I>(c.args()))...);
    return tuple_of(shaped_term<C, std::remove_cvref_t<decltype(adjoints)>, I>(adjoints)...);
  }
}
template <class C, class G>
auto local_rule(const C& c, const G& g) {
  const auto y = hold(c);
  if constexpr (C::kind == node_kind::reduction) {
    constexpr unsigned removed = removed_axes<C>();
    const auto x = hold(std::get<0>(c.args()));
    const auto adjoints = C::op_type::gradient(expanded<removed>(g), expanded<removed>(y), x,
                                               reduced_count<reduced_bits<C>(), value_type_of<C>>(x),
                                               over_reduced_axes<reduced_bits<C>()>{});
    return tuple_of(sum_to<shape_of<std::tuple_element_t<0, operands_of<C>>>>(std::get<0>(adjoints)));
  } else if constexpr (C::kind == node_kind::view) {
    const auto x = hold(std::get<0>(c.args()));
    return op_derivative(c.op, full_shape(g, y), y, x);
  } else if constexpr (C::kind == node_kind::reference || C::kind == node_kind::accumulation) {
    return tuple_of(g);  // the value of its target / the sum of its terms: each receives g
  } else {
    static_assert(C::kind == node_kind::elementwise || C::kind == node_kind::kernel);
    return operand_rule(c, g, y, std::make_index_sequence<std::tuple_size_v<operands_of<C>>>{});
  }
}

template <class S, class T>
struct adjoint_of;

// The adjoint of node type C as its rules read it: computed once, shaped like C.
template <class S, class C>
struct adjoint_key {};
template <class C, class A>
auto stored_adjoint(const C& c, const A& adjoint) {
  // No gradient reaches C: no such reference is ever made, but type walks over a rule's terms can
  // still ask for its target's type.
  if constexpr (is_no_gradient_v<A>) return hold(expand_as(zero<value_type_of<C>>{}, hold(c)));
  else if constexpr (std::is_same_v<shape_of<A>, shape_of<C>>) return hold(adjoint);
  else return hold(expand_as(adjoint, hold(c)));
}
template <class S, class C>
using adjoint_ref = reference<adjoint_key<S, C>, value_type_of<C>, shape_of<C>>;

template <class S, class C, std::size_t I>
using term_of =
    std::remove_cvref_t<std::tuple_element_t<I, decltype(local_rule(std::declval<const C&>(),
                                                                     std::declval<const adjoint_ref<S, C>&>()))>>;

template <class C, std::size_t I>
struct edge {
  using user = C;
  static constexpr std::size_t operand = I;
};

// The edges (user type, operand index) along which adjoints reach nodes of type T.
template <class S, class T, class C, std::size_t I>
constexpr auto edge_if() {
  if constexpr (!std::is_same_v<std::tuple_element_t<I, operands_of<C>>, T>) return type_list<>{};
  else if constexpr (is_no_gradient_v<term_of<S, C, I>>) return type_list<>{};
  else return type_list<edge<C, I>>{};
}
template <class S, class T, class C>
constexpr auto edges_from() {
  if constexpr (std::tuple_size_v<operands_of<C>> == 0 || !S::template relevant<C>) return type_list<>{};
  else
    return []<std::size_t... I>(std::index_sequence<I...>) {
      return (type_list<>{} + ... + edge_if<S, T, C, I>());
    }(std::make_index_sequence<std::tuple_size_v<operands_of<C>>>{});
}
template <class S, class T, class Nodes>
struct edges_into;
template <class S, class T, class... C>
struct edges_into<S, T, type_list<C...>> {
  using type = decltype((type_list<>{} + ... + edges_from<S, T, C>()));
};
template <class S, class T>
using edges_into_t = typename edges_into<S, T, typename S::nodes>::type;

// The terms waiting to be summed into the adjoints of one node type's objects, one list per
// incoming edge type, each term with the index of the object it is for. A struct of vectors (each
// list a base class found by its index), one per node type: a std::tuple of vectors per object cost
// g++ time, in the constraints of std::tuple's and std::vector's members over these term types,
// that grew faster than the model (half of building a 3-layer MLP's sweep).
template <std::size_t I, class Term>
struct term_list {
  std::vector<std::size_t> objects;
  std::vector<Term> terms;
};
template <class Seq, class... Terms>
struct term_lists_of;
template <std::size_t... I, class... Terms>
struct term_lists_of<std::index_sequence<I...>, Terms...> : term_list<I, Terms>... {};
template <class... Terms>
struct term_lists : term_lists_of<std::index_sequence_for<Terms...>, Terms...> {};
template <std::size_t I, class Term>
term_list<I, Term>& list_at(term_list<I, Term>& l) {
  return l;
}
template <std::size_t I, class Term>
const term_list<I, Term>& list_at(const term_list<I, Term>& l) {
  return l;
}

template <class S, class Edges>
struct pending_terms;
template <class S, class... E>
struct pending_terms<S, type_list<E...>> {
  using type = term_lists<term_of<S, typename E::user, E::operand>...>;
};
template <class S, class T>
using pending_t = typename pending_terms<S, edges_into_t<S, T>>::type;

template <class First, class... Rest>
auto sum_of_all(const First& first, const Rest&... rest) {
  if constexpr (sizeof...(Rest) == 0) return first;
  else return (first + ... + rest);
}
// The terms of list I sent to one object.
template <std::size_t I, class Term>
std::vector<Term> terms_for(const term_list<I, Term>& list, std::size_t object) {
  std::vector<Term> out;
  for (std::size_t k = 0; k < list.objects.size(); ++k)
    if (list.objects[k] == object) out.push_back(list.terms[k]);
  return out;
}
template <class... V, std::size_t... I>
auto sum_lists(const term_lists<V...>& pending, std::size_t object, std::index_sequence<I...>) {
  return sum_of_all(accumulate_terms(terms_for(list_at<I>(pending), object))...);
}
// The adjoint of one object: the sum of the terms its users sent it.
template <class... V>
auto sum_pending(const term_lists<V...>& pending, std::size_t object) {
  if constexpr (sizeof...(V) == 0) return no_gradient{};
  else return sum_lists(pending, object, std::index_sequence_for<V...>{});
}

template <class S, class T>
struct adjoint_of {
  using type = std::conditional_t<std::is_same_v<T, typename S::loss_type>, one<value_type_of<T>>,
                                  decltype(sum_pending(std::declval<const pending_t<S, T>&>(), std::size_t{}))>;
};

}  // namespace detail::sweep
template <class S, class C>
struct reference_target<detail::sweep::adjoint_key<S, C>> {
  using type = decltype(detail::sweep::stored_adjoint(
      std::declval<const C&>(), std::declval<const typename detail::sweep::adjoint_of<S, C>::type&>()));
};
namespace detail::sweep {

// One table per node type: its objects, where each object is found by identity, and the terms
// waiting for each. Tables are base classes found by their index (table_at deduces the node type),
// not elements of a std::tuple: a tuple of a hundred vectors of node types costs the compiler
// seconds in the constraints of its constructors.
template <class S, std::size_t I, class T>
struct node_table {
  using node_type = T;
  std::vector<T> objects;
  std::unordered_map<const void*, std::size_t> index;
  pending_t<S, T> pending;
};
template <std::size_t I, class S, class T>
node_table<S, I, T>& table_at(node_table<S, I, T>& t) {
  return t;
}
template <class S, class Seq, class Nodes>
struct tables_of;
template <class S, std::size_t... I, class... T>
struct tables_of<S, std::index_sequence<I...>, type_list<T...>> : node_table<S, I, T>... {
  static constexpr std::size_t size = sizeof...(T);
};
template <class S, class Nodes>
struct tables;
template <class S, class... T>
struct tables<S, type_list<T...>> : tables_of<S, std::index_sequence_for<T...>, type_list<T...>> {};

template <class S>
struct sweep {
  using nodes = typename S::nodes;
  tables<S, nodes> t;

  template <class E>
  static constexpr std::size_t slot = index_in<E, nodes>::value;

  // The node objects, each once (copies of one node share its identity).
  template <class E>
  void collect(const E& e) {
    if constexpr (S::template relevant<E>) {
      constexpr std::size_t k = slot<E>;
      auto& table = table_at<k, S>(t);
      const void* id = node_identity(e);
      if (table.index.contains(id)) return;
      if constexpr (E::kind == node_kind::accumulation)
        for (const auto& term : e.items()) collect(term);
      else if constexpr (has_operands<E>)
        std::apply([&](const auto&... a) { (collect(a), ...); }, e.args());
      table.index.emplace(id, table.objects.size());
      table.objects.push_back(e);
    }
  }

  // Users before their operands: reverse post-order. Each object's adjoint is complete when it
  // is reached, and its rule sends one term to each operand that carries a gradient.
  template <std::size_t K>
  void send_from() {
    auto& table = table_at<K, S>(t);
    using C = typename std::remove_reference_t<decltype(table)>::node_type;
    if constexpr (std::tuple_size_v<operands_of<C>> > 0 && S::template relevant<C>) {
      auto& objects = table.objects;
      for (std::size_t n = 0; n < objects.size(); ++n) {
        const C& c = objects[n];
        const auto adjoint = [&] {
          if constexpr (std::is_same_v<C, typename S::loss_type>) return one<value_type_of<C>>{};
          else return sum_pending(table.pending, n);
        }();
        if constexpr (!is_no_gradient_v<decltype(adjoint)>) {
          using Key = adjoint_key<S, C>;
          const auto terms = local_rule(
              c, make_reference<Key, value_type_of<C>, shape_of<C>>(stored_adjoint(c, adjoint)));
          if constexpr (C::kind == node_kind::accumulation) {
            for (const auto& term : c.items()) send<C, 0>(term, std::get<0>(terms));
          } else {
            [&]<std::size_t... I>(std::index_sequence<I...>) {
              (send<C, I>(std::get<I>(c.args()), std::get<I>(terms)), ...);
            }(std::make_index_sequence<std::tuple_size_v<operands_of<C>>>{});
          }
        }
      }
    }
    if constexpr (K > 0) send_from<K - 1>();
  }

  template <class C, std::size_t I, class A, class Term>
  void send(const A& operand, const Term& term) {
    if constexpr (!is_no_gradient_v<Term> && S::template relevant<A>) {
      constexpr std::size_t k = slot<A>;
      constexpr std::size_t e = index_in<edge<C, I>, edges_into_t<S, A>>::value;
      auto& table = table_at<k, S>(t);
      const std::size_t n = table.index.at(node_identity(operand));
      auto& list = list_at<e>(table.pending);
      list.objects.push_back(n);
      list.terms.push_back(term);
    }
  }

  // The adjoint of a leaf, shaped like it (zeros when the loss does not depend on it).
  template <class Leaf>
  auto leaf_gradient(const Leaf& leaf) {
    using T = value_type_of<Leaf>;
    if constexpr (!S::template relevant<Leaf>) {
      return expand_as(zero<T>{}, leaf);
    } else {
      constexpr std::size_t k = slot<Leaf>;
      auto g = sum_pending(table_at<k, S>(t).pending, 0);
      if constexpr (is_no_gradient_v<decltype(g)>) return expand_as(zero<T>{}, leaf);
      else if constexpr (!std::is_same_v<shape_of<decltype(g)>, shape_of<Leaf>>) return expand_as(g, leaf);
      else return g;
    }
  }
};

}  // namespace detail::sweep

// The gradients of a scalar loss with respect to the given leaves, by one reverse sweep over the
// model's node objects: each node's adjoint is built once and summed over its users, so the
// gradient grows linearly with the model.
template <expression E, expression... Leaves>
auto grad_sweep(const E& loss, const Leaves&... leaves) {
  static_assert(detail::differentiated_expression_is_scalar<E>::value,
                "symflow: grad differentiates a scalar (rank-0) expression; reduce it first, e.g. sum(e)");
  static_assert((detail::differentiable_leaf<Leaves>::value && ...),
                "symflow: grad differentiates with respect to floating-point placeholders and variables only");
  using S = detail::sweep::spec<E, Leaves...>;
  detail::sweep::sweep<S> s;
  s.collect(loss);
  s.template send_from<decltype(s.t)::size - 1>();
  if constexpr (sizeof...(Leaves) == 1) return s.leaf_gradient(leaves...);
  else return tuple_of(s.leaf_gradient(leaves)...);
}

}  // namespace symflow
