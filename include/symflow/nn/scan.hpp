#pragma once
// scan(cell, h0, xs): a recurrence over the leading (time) axis of xs, as one node.
//
//   nn::gru_cell<"gru", 16, 32> cell;
//   auto states = scan(cell, h0, xs);   // xs [T, n, 16], h0 [n, 32] -> states [T, n, 32]
//
// states[0] = cell(xs[0], h0) and states[t] = cell(xs[t], states[t-1]). The cell is any callable
// that takes (x_t, state) expressions and returns the next state's expression, with the dtype and
// shape of h0 (nn::gru_cell is one; a lambda works too). It is called once, on two placeholders
// ("scan/input", "scan/state"). The expression it returns, the body, runs T times, so the model's
// type is the same for every sequence length, static or dyn. The other leaves the body reads (the
// cell's variables, other placeholders) become operands of the scan node, so grad(loss, W) reaches
// W through it.
//
// The gradient is backpropagation through time by the body's own derivative rules: the body's
// vector-Jacobian product, grad(sum(body * adjoint), leaf), is derived once at compile time and run
// backwards over the steps on the forward states (nn/scan_backward.hpp).
//
// In a graph value (to_graph) it is the graph's own scan (ir/control_flow/scan.hpp) with the body
// as its sub-graph; the typed gradient's nodes have no graph form (differentiate the lowered model).
// Not supported: jvp and second derivatives through a scan (compile errors), a scan in a scan's body
// (compile error), and CUDA evaluation. A model with a scan takes its gradient by the typed sweep,
// not by a runtime program (runtime/program_gradient.hpp).
#include <memory>
#include <tuple>
#include <type_traits>

#include "../core/source_site.hpp"
#include "scan_backward.hpp"
#include "scan_forward.hpp"

namespace symflow {
namespace detail::scan {
template <class Op>
inline constexpr bool is_scan_op = false;
template <class Body, class State, class Input, class Leaves>
inline constexpr bool is_scan_op<ops::scan_op<Body, State, Input, Leaves>> = true;
template <class E>
struct is_scan_node : std::bool_constant<[] {
  if constexpr (requires { typename E::op_type; }) return is_scan_op<typename E::op_type>;
  else return false;
}()> {};
}  // namespace detail::scan

template <class Cell, expression H0, expression Xs>
auto scan(const Cell& cell, const H0& h0, const Xs& xs, source_site where = source_site::current()) {
  using T = value_type_of<H0>;
  static_assert(std::is_floating_point_v<T>, "symflow: scan: the state (h0) must be a floating-point tensor");
  static_assert(shape_of<Xs>::rank >= 1, "symflow: scan: xs needs a leading time axis");
  using State = detail::scan::state_leaf<T, shape_of<H0>>;
  using Input = detail::scan::input_leaf<value_type_of<Xs>, typename detail::scan::step_shape<shape_of<Xs>>::type>;
  static_assert(std::is_invocable_v<const Cell&, const Input&, const State&>,
                "symflow: scan: the cell must be callable as cell(x_t, state) with expressions");
  const auto body = cell(Input{}, State{});
  using Body = std::remove_cvref_t<decltype(body)>;
  static_assert(expression<Body>, "symflow: scan: the cell must return an expression (one state tensor)");
  static_assert(std::is_same_v<value_type_of<Body>, T> && shape_of<Body>::rank == shape_of<H0>::rank,
                "symflow: scan: the cell's result must have the dtype and rank of the state h0");
  static_assert(std::is_same_v<detail::nodes_where_t<detail::scan::is_scan_node, Body>, detail::type_list<>>,
                "symflow: scan: a scan inside a scan's body is not supported");
  using Leaves = detail::scan::outer_leaves_t<Body>;
  return std::apply(
      [&](const auto&... leaf) {
        return make_kernel(ops::scan_op<Body, State, Input, Leaves>{{}, std::make_shared<const Body>(body)}, where, h0, xs,
                           leaf...);
      },
      Leaves{});
}

}  // namespace symflow
