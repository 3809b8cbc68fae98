#pragma once
// What the control-flow ops (scan, cond, while: this folder) share: reading a node's sub-graphs and
// checking that a sub-graph takes the operands it will be given. A sub-graph is called positionally:
// its inputs take the values listed, in order; its parameters are not allowed (a value from
// outside enters as an operand, so a body's gradient reaches it).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../graph.hpp"

namespace symflow {
namespace control_flow {

// A control-flow op's entry for the schema table (ir/op_registry.hpp): its keys and the kind of
// each. `graph` keys hold sub-graphs.
enum class flow_attribute { graph, integer };
struct flow_attribute_spec {
  std::string_view key;
  flow_attribute kind;
};

// The sub-graph under `key` (validate has checked that it is there and is a graph).
inline const graph& body_of(const graph_node& n, std::string_view key) {
  const attribute_value* v = n.attribute(key);
  const subgraph* s = v ? std::get_if<subgraph>(v) : nullptr;
  if (!s || !s->body)
    throw graph_error("node '" + n.name + "' (" + n.op + "): attribute '" + std::string(key) + "' is not a graph");
  return *s->body;
}

// `given` can be bound where `declared` is expected: same dtype and rank, equal extents where
// both are known.
inline bool type_fits(const graph_type& declared, const graph_type& given) {
  if (declared.type != given.type || declared.shape.size() != given.shape.size()) return false;
  for (std::size_t i = 0; i < declared.shape.size(); ++i)
    if (declared.shape[i] >= 0 && given.shape[i] >= 0 && declared.shape[i] != given.shape[i]) return false;
  return true;
}

// The extents two fitting types agree on; unknown (-1) where either is unknown or they differ.
inline graph_type common_type(const graph_type& a, const graph_type& b) {
  graph_type t = a;
  for (std::size_t i = 0; i < t.shape.size(); ++i)
    if (b.shape[i] != a.shape[i]) t.shape[i] = unknown_extent;
  return t;
}

// The type of output k of a sub-graph (validate has checked it exists).
inline graph_type output_type(const graph& body, std::size_t k) { return body.type_of(body.outputs.at(k)); }

// Checks that the sub-graph under `key` takes `args` (one input per argument, each of a fitting
// type) and has `outputs` outputs; graph_error naming the node, the body and what differs.
inline void check_call(const graph_node& n, std::string_view key, const std::vector<graph_type>& args,
                       std::size_t outputs, const std::string& who) {
  const graph& body = body_of(n, key);
  const std::string what = who + ": its " + std::string(key) + " ";
  if (!body.parameters.empty())
    throw graph_error(what + "has parameters; a sub-graph reads values from outside as operands");
  if (body.inputs.size() != args.size())
    throw graph_error(what + "takes " + std::to_string(body.inputs.size()) + " inputs, the node gives it " +
                      std::to_string(args.size()));
  for (std::size_t k = 0; k < args.size(); ++k)
    if (!type_fits(body.inputs[k].type, args[k]))
      throw graph_error(what + "input " + std::to_string(k) + " '" + body.inputs[k].name + "' is " +
                        graph_type_string(body.inputs[k].type) + ", the node gives it " + graph_type_string(args[k]));
  if (body.outputs.size() != outputs)
    throw graph_error(what + "has " + std::to_string(body.outputs.size()) + " outputs, not " + std::to_string(outputs));
}

// One input of a sub-graph's calling convention: the name of the leaf that takes it, and its type.
struct call_input {
  std::string name;
  graph_type type;
};

// g as a sub-graph called with `order`: its inputs become exactly these, in this order (a leaf of g
// of that name, input or parameter, takes its place; one that g does not read is added), so that
// its parameters become inputs. How a body built as an expression (the typed scan's) becomes a
// control-flow body; graph_error naming a leaf of g that `order` lacks.
inline graph with_inputs(const graph& g, const std::vector<call_input>& order) {
  graph out;
  for (const auto& c : order) out.inputs.push_back(graph_leaf{c.name, "", c.type, {}, std::nullopt});
  std::vector<std::uint32_t> id;
  id.reserve(g.value_count());
  auto take = [&](const graph_leaf& leaf) {
    std::uint32_t k = 0;
    while (k < order.size() && order[k].name != leaf.name) ++k;
    if (k == order.size()) throw graph_error("sub-graph: its leaf '" + leaf.name + "' is none of the call's inputs");
    out.inputs[k].scope = leaf.scope;
    out.inputs[k].where = leaf.where;
    id.push_back(k);
  };
  for (const auto& l : g.inputs) take(l);
  for (const auto& l : g.parameters) take(l);
  std::uint32_t next = std::uint32_t(order.size());
  for (const auto& c : g.constants) out.constants.push_back(c), id.push_back(next++);
  for (const auto& n : g.nodes) {
    out.nodes.push_back(n);
    for (auto& i : out.nodes.back().inputs) i = id.at(i);
    id.push_back(next++);
  }
  for (auto o : g.outputs) out.outputs.push_back(id.at(o));
  return out;
}

// The operand whose adjoint an adjoint op (scan_adjoint, while_adjoint) computes: its `wrt`
// attribute, checked against the loop's operand count.
inline std::size_t wrt_operand(const graph_node& n, std::size_t operands, const std::string& who) {
  const std::int64_t k = std::get<std::int64_t>(*n.attribute("wrt"));
  if (k < 0 || std::size_t(k) >= operands)
    throw graph_error(who + ": wrt is " + std::to_string(k) + ", the loop has " + std::to_string(operands) + " operands");
  return std::size_t(k);
}

// A value's type without its leading axis (a step of a sequence).
inline graph_type step_type(const graph_type& t) {
  graph_type s = t;
  s.shape.erase(s.shape.begin());
  return s;
}

// A boolean scalar (or one-element tensor): a condition.
inline bool is_condition_type(const graph_type& t) {
  if (t.type != dtype::boolean) return false;
  for (auto e : t.shape)
    if (e != 1 && e != unknown_extent) return false;
  return true;
}

}  // namespace control_flow
}  // namespace symflow
