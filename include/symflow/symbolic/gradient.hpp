#pragma once
#include <cstddef>
#include <tuple>

#include "../eval/program_route.hpp"
#include "../expr/scope.hpp"
#include "grad.hpp"
// The runtime program's route needs the graph runtime's op tables, which cost a translation unit
// that compiles them about 45 s: it is taken where they are compiled once and linked
// (SYMFLOW_SEPARATE_COMPILATION, core/separate_compilation.hpp, as the project's CMake
// targets do), or where SYMFLOW_PROGRAM_GRADIENTS asks for it; elsewhere grad uses the typed sweep.
#if defined(SYMFLOW_SEPARATE_COMPILATION) || defined(SYMFLOW_PROGRAM_GRADIENTS)
#include "program_gradient.hpp"
#define SYMFLOW_DETAIL_PROGRAM_ROUTE 1
#else
#define SYMFLOW_DETAIL_PROGRAM_ROUTE 0
#endif
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
// Whether a model grad would sweep is differentiated by a runtime program instead (see grad).
#if SYMFLOW_DETAIL_PROGRAM_ROUTE
template <class E, class... Leaves>
inline constexpr bool gradient_by_program = program::program_applies<E, program::leaves_of_t<E>, Leaves...>::value;
// eval computes the scalar values of the models grad would give to a program with a program too:
// a deep model's loss, evaluated for a progress line, would otherwise cost the compiler more than
// its gradient does.
// (Asked of every expression eval is given: only scalars are measured, once each.)
template <class E, bool Scalar = shape_of<E>::rank == 0>
struct large_scalar_model : std::false_type {};
template <class E>
struct large_scalar_model<E, true> : std::bool_constant<gradient_by_sweep<E> && gradient_by_program<E>> {};
template <class E>
struct evaluated_by_program<E, std::enable_if_t<large_scalar_model<E>::value>> : std::true_type {
  static auto rewrite(const E& e) { return value_by_program(e); }
};
#else
template <class E, class... Leaves>
inline constexpr bool gradient_by_program = false;
#endif
}  // namespace detail

// grad(loss, W, b): one gradient expression per leaf, each shaped like its leaf, derived from the
// ops' own derivative rules. Nothing is computed until evaluated. Small expressions are
// differentiated path by path at compile time and simplified; models whose subexpressions are
// shared (see detail::gradient_by_sweep) by a runtime program: the loss's graph differentiated by
// the same rules' runtime forms, once, here (symbolic/program_gradient.hpp), so their compile cost
// does not grow with the gradient. Where the program cannot hold the result (leaves of another
// dtype than the loss's) or the runtime's tables are not linked (above), by a typed reverse sweep
// over their nodes (grad_sweep).
template <expression E, expression... Leaves>
auto grad(const E& loss, const Leaves&... leaves) {
  if constexpr (detail::gradient_by_sweep<E>) {
    name_scope s("grad");
    if constexpr (detail::gradient_by_program<E, Leaves...>) return grad_by_program(loss, leaves...);
    else return grad_sweep(loss, leaves...);
  } else {
    return grad_by_paths(loss, leaves...);
  }
}

// value_and_grad(loss, W, b): the loss and its gradients as one tuple, (loss, dW, db), to evaluate
// together. Where grad takes the runtime program's route, the value is that program's output 0,
// so evaluating all of them runs the model forward once; elsewhere it is `loss` itself.
template <expression E, expression... Leaves>
auto value_and_grad(const E& loss, const Leaves&... leaves) {
  if constexpr (detail::gradient_by_sweep<E> && detail::gradient_by_program<E, Leaves...>) {
    name_scope s("grad");
    return value_and_grad_by_program(loss, leaves...);
  } else {
    if constexpr (sizeof...(Leaves) == 1) return tuple_of(loss, grad(loss, leaves...));
    else return std::apply([&](const auto&... g) { return tuple_of(loss, g...); }, grad(loss, leaves...));
  }
}

}  // namespace symflow
