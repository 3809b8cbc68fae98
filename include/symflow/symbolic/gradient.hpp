#pragma once
#include <cstddef>
#include <tuple>

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
// Whether the gradient of a model grad would sweep is computed by a runtime program instead, and
// how (grad, value_and_grad). None here: the symbolic layer knows no runtime. The graph runtime's
// runtime/program_gradient.hpp specialises this for the models a program can differentiate; the
// umbrella header includes it where the runtime's op tables are linked (SYMFLOW_SEPARATE_COMPILATION,
// core/separate_compilation.hpp, as the project's CMake targets do) or SYMFLOW_PROGRAM_GRADIENTS
// asks for it.
template <class E, class... Leaves>
struct gradient_program_route : std::false_type {};
}  // namespace detail

// grad(loss, W, b): one gradient expression per leaf, each shaped like its leaf, derived from the
// ops' own derivative rules. Nothing is computed until evaluated. Small expressions are
// differentiated path by path at compile time and simplified; models whose subexpressions are
// shared (see detail::gradient_by_sweep) by a runtime program: the loss's graph differentiated by
// the same rules' runtime forms, once, here (runtime/program_gradient.hpp), so their compile cost
// does not grow with the gradient. Where the program cannot hold the result (leaves of another
// dtype than the loss's) or the runtime's tables are not linked (above), by a typed reverse sweep
// over their nodes (grad_sweep).
template <expression E, expression... Leaves>
auto grad(const E& loss, const Leaves&... leaves) {
  if constexpr (detail::gradient_by_sweep<E>) {
    name_scope s("grad");
    if constexpr (detail::gradient_program_route<E, Leaves...>::value)
      return detail::gradient_program_route<E, Leaves...>::grad(loss, leaves...);
    else
      return grad_sweep(loss, leaves...);
  } else {
    return grad_by_paths(loss, leaves...);
  }
}

// value_and_grad(loss, W, b): the loss and its gradients as one tuple, (loss, dW, db), to evaluate
// together. Where grad takes the runtime program's route, the value is that program's output 0,
// so evaluating all of them runs the model forward once; elsewhere it is `loss` itself.
template <expression E, expression... Leaves>
auto value_and_grad(const E& loss, const Leaves&... leaves) {
  if constexpr (detail::gradient_by_sweep<E> && detail::gradient_program_route<E, Leaves...>::value) {
    name_scope s("grad");
    return detail::gradient_program_route<E, Leaves...>::value_and_grad(loss, leaves...);
  } else {
    if constexpr (sizeof...(Leaves) == 1) return tuple_of(loss, grad(loss, leaves...));
    else return std::apply([&](const auto&... g) { return tuple_of(loss, g...); }, grad(loss, leaves...));
  }
}

}  // namespace symflow
