#pragma once
// The gradient of a control-flow node (ir/control_flow/) in differentiate() (grad.hpp): the op's
// own derivative rule, given a differentiator that applies nodes to the gradient graph and turns
// a sub-graph into its vector-Jacobian product — by differentiate() itself, so nested control flow
// differentiates by the same route.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../core/separate_compilation.hpp"
#include "../ir/control_flow/list.hpp"
#include "builder.hpp"

namespace symflow {

SYMFLOW_LIBRARY_LINKAGE graph differentiate(const graph& g, const std::vector<std::string>& wrt);  // grad.hpp

namespace runtime_detail {

// What a control-flow op's derivative rule (ir/control_flow/) builds with: nodes in the gradient
// graph, and the vector-Jacobian product of a sub-graph.
struct control_flow_differentiator {
  graph_builder& b;
  bool floating(const graph_handle& h) const { return is_floating_dtype(h.value_type()); }
  graph_handle apply(std::string_view op, const std::vector<graph_handle>& in, std::vector<graph_attribute> attributes,
                     const std::string& name) {
    return b.apply(op, in, std::move(attributes), name);
  }
  // The graph (inputs..., adjoint of output 0) -> (adjoint of input k for k in wrt), where body is
  // (inputs...) -> (output 0): differentiate() of sum(output 0 * adjoint), without that sum.
  std::shared_ptr<const graph> vjp(const graph& body, const std::vector<std::size_t>& wrt) const {
    graph_builder v(body);
    const std::uint32_t out = body.outputs.at(0);
    std::string name = "adjoint";
    for (bool taken = true; taken;) {
      taken = false;
      for (const auto& in : body.inputs) taken = taken || in.name == name;
      if (taken) name += "_";
    }
    const graph_type t = body.type_of(out);
    const graph_handle g = v.input(name, t.type, t.shape);
    graph_handle loss = v.apply(ops::mul_op::name, {v.handle(out), g});
    if (!t.shape.empty()) {
      std::vector<std::int64_t> all(t.shape.size());
      for (std::size_t i = 0; i < all.size(); ++i) all[i] = std::int64_t(i);
      loss = v.apply(ops::sum_op::name, {loss}, {{"axes", all}, {"keepdims", false}});
    }
    std::vector<std::string> names;
    for (auto k : wrt) names.push_back(body.inputs.at(k).name);
    graph dg = differentiate(v.build({loss}), names);
    dg.outputs.erase(dg.outputs.begin());
    return std::make_shared<const graph>(std::move(dg));
  }
};

// The adjoint of each operand of control-flow node n (nullopt where none flows), for its adjoint gy
// and value y; graph_error naming the node for an op without a derivative (the adjoint ops).
inline std::vector<std::optional<graph_handle>> control_flow_adjoints(graph_builder& b, const graph_node& n,
                                                                      const graph_handle& gy, const graph_handle& y) {
  std::vector<graph_handle> x;
  for (auto i : n.inputs) x.push_back(b.handle(i));
  std::vector<std::optional<graph_handle>> contributions(x.size());
  control_flow::visit(n.op, [&](auto op) {
    if constexpr (requires { op.derivative(std::declval<control_flow_differentiator&>(), n, gy, y, x); }) {
      control_flow_differentiator d{b};
      contributions = op.derivative(d, n, gy, y, x);
    } else {
      throw graph_error("differentiate: op '" + n.op + "' (node '" + n.name +
                        "') has no derivative: second derivatives through control flow are not supported");
    }
  });
  contributions.resize(x.size());
  return contributions;
}

}  // namespace runtime_detail
}  // namespace symflow
