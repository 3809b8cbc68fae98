#pragma once
#include <algorithm>
#include <cstddef>
#include <tuple>
#include <type_traits>

#include "../expr/node.hpp"

namespace symflow {

// Questions about an expression's type, answered by class templates: the compiler instantiates
// each (question, node type) once, so a model whose subexpressions are shared costs its number of
// node types, not its number of paths. (Recursive constexpr functions are re-evaluated on every
// path, exponentially often in the depth of such a model.)
namespace detail {
template <class Leaf, class E, class Operands = operands_of<E>>
struct depends_on_type;
template <class Leaf, class E, class... A>
struct depends_on_type<Leaf, E, std::tuple<A...>> {
  static constexpr bool value = std::is_same_v<E, Leaf> || (depends_on_type<Leaf, A>::value || ...);
};

// Counts saturate here: a model with shared subexpressions has a tree far larger than its graph.
inline constexpr std::size_t count_cap = std::size_t(1) << 40;
constexpr std::size_t saturating_sum(std::size_t a, std::size_t b) { return std::min(count_cap, a + b); }

template <class X, class E, class Operands = operands_of<E>>
struct occurrences_of_type;
template <class X, class E, class... A>
struct occurrences_of_type<X, E, std::tuple<A...>> {
  static constexpr std::size_t value = [] {
    std::size_t n = std::is_same_v<X, E> ? 1 : 0;
    ((n = saturating_sum(n, occurrences_of_type<X, A>::value)), ...);
    return n;
  }();
};

template <class E, class Operands = operands_of<E>>
struct tree_size_of_type;
template <class E, class... A>
struct tree_size_of_type<E, std::tuple<A...>> {
  static constexpr std::size_t value = [] {
    std::size_t n = 1;
    ((n = saturating_sum(n, tree_size_of_type<A>::value)), ...);
    return n;
  }();
};
}  // namespace detail

// Whether the expression E contains the leaf type Leaf.
template <class Leaf, class E>
constexpr bool depends_on() {
  return detail::depends_on_type<Leaf, E>::value;
}

// How many times the node type X occurs in the tree E (saturating at 2^40).
template <class X, class E>
constexpr std::size_t occurrences() {
  return detail::occurrences_of_type<X, E>::value;
}

// Nodes in the expression tree (a subexpression used twice counts twice, as in the type; saturating
// at 2^40).
template <class E>
constexpr std::size_t node_count() {
  return detail::tree_size_of_type<E>::value;
}

// Nodes in the expression tree, counted up to Cap.
template <class E, std::size_t Cap>
constexpr std::size_t tree_size_up_to() {
  return std::min(Cap, node_count<E>());
}

template <expression E>
constexpr std::size_t node_count(const E&) {
  return node_count<E>();
}

}  // namespace symflow
