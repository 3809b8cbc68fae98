#pragma once
// The control-flow ops: graph nodes that hold sub-graphs and call them (ir/control_flow/). Each
// file holds everything about its op (name, doc, operands, attributes, type rule, loop, gradient);
// this list registers them with the graph schema (ir/op_registry.hpp), the validator, the builder,
// the interpreter and differentiate. Their loops run on the CPU interpreter; the typed evaluators
// and the CUDA graph runner do not take them.
#include <tuple>

#include "cond.hpp"
#include "scan.hpp"
#include "while_loop.hpp"

namespace symflow {
namespace control_flow {

using registered = std::tuple<scan_flow, scan_adjoint_flow, cond_flow, while_flow, while_adjoint_flow>;

// Calls f(Op{}) for the control-flow op named `name` and returns true; false when there is none.
template <class F>
bool visit(std::string_view name, F&& f) {
  return std::apply([&](auto... op) { return ((op.name == name ? (f(op), true) : false) || ...); }, registered{});
}

inline bool is_control_flow(std::string_view name) {
  return visit(name, [](auto) {});
}

}  // namespace control_flow
}  // namespace symflow
