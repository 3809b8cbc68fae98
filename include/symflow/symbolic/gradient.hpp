#pragma once
#include <cstddef>

#include "../expr/scope.hpp"
#include "grad.hpp"
#include "reverse_sweep.hpp"
#include "traits.hpp"

namespace symflow {

namespace detail {
// Two ways to the same gradient. Walking the loss's paths (grad_by_paths) fuses every adjoint into
// its user's loop and simplifies it: the best code for an expression whose tree is small, but its
// size is the number of paths, which grows exponentially with the depth of a model that reuses its
// subexpressions (`auto h = ...;` read twice per layer). The reverse sweep (grad_sweep) visits each
// node once and stores adjoints and the values rules read, so it grows with the number of nodes.
// The sweep is chosen once paths outnumber nodes several times over and the tree is not tiny.
template <class E>
struct distinct_node_count;
template <class... T>
struct distinct_node_count<type_list<T...>> {
  static constexpr std::size_t value = sizeof...(T);
};
template <class E>
inline constexpr bool gradient_by_sweep =
    node_count<E>() > 128 && node_count<E>() > 4 * distinct_node_count<typename post_order<type_list<>, E>::type>::value;
}  // namespace detail

// grad(loss, W, b): one gradient expression per leaf, each shaped like its leaf, derived from the
// ops' own derivative rules at compile time. Nothing is computed until evaluated. Small expressions
// are differentiated path by path and simplified; models whose subexpressions are shared by a
// reverse sweep over their nodes (see detail::gradient_by_sweep).
template <expression E, expression... Leaves>
auto grad(const E& loss, const Leaves&... leaves) {
  if constexpr (detail::gradient_by_sweep<E>) {
    name_scope s("grad");
    return grad_sweep(loss, leaves...);
  } else {
    return grad_by_paths(loss, leaves...);
  }
}

}  // namespace symflow
