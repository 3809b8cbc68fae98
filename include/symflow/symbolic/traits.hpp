#pragma once
#include <tuple>
#include <type_traits>

#include "../expr/node.hpp"

namespace symflow {




// Whether the expression E contains the leaf type Leaf.
template <class Leaf, class E>
constexpr bool depends_on() {
  if constexpr (std::is_same_v<E, Leaf>) {
    return true;
  } else if constexpr (has_operands<E>) {
    return []<class... A>(std::type_identity<std::tuple<A...>>) {
      return (depends_on<Leaf, A>() || ...);
    }(std::type_identity<operands_of<E>>{});
  } else {
    return false;
  }
}

// How many times the node type X occurs in the tree E.
template <class X, class E>
constexpr std::size_t occurrences() {
  std::size_t here = std::is_same_v<X, E> ? 1 : 0;
  if constexpr (has_operands<E>) {
    return here + []<class... A>(std::type_identity<std::tuple<A...>>) {
      return (std::size_t(0) + ... + occurrences<X, A>());
    }(std::type_identity<operands_of<E>>{});
  } else {
    return here;
  }
}

// Nodes in the expression tree (a subexpression used twice counts twice, as in the type).
template <class E>
constexpr std::size_t node_count() {
  if constexpr (has_operands<E>) {
    return []<class... A>(std::type_identity<std::tuple<A...>>) {
      return (std::size_t(1) + ... + node_count<A>());
    }(std::type_identity<operands_of<E>>{});
  } else {
    return 1;
  }
}

template <expression E>
constexpr std::size_t node_count(const E&) {
  return node_count<E>();
}

}  // namespace symflow
