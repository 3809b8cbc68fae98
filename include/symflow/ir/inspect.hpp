#pragma once
// inspect(graph): a readable summary — values, ops counted by name, parameter count, shapes, scopes.
#include <map>
#include <string>

#include "graph.hpp"

namespace symflow {

inline std::string inspect(const graph& g) {
  std::string out;
  // Parameter elements: the product of each parameter's extents (from its value when an extent is unknown).
  std::uint64_t elements = 0;
  bool all_known = true;
  for (const auto& p : g.parameters) {
    std::uint64_t n = 1;
    bool known = true;
    for (std::size_t i = 0; i < p.type.shape.size(); ++i) {
      std::int64_t e = p.type.shape[i];
      if (e < 0 && p.value) e = p.value->extents[i];
      if (e < 0) known = false;
      else n *= static_cast<std::uint64_t>(e);
    }
    if (known) elements += n;
    else all_known = false;
  }
  auto plural = [](std::size_t n, const char* word) {
    return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
  };
  out += "graph: " + plural(g.inputs.size(), "input") + ", " + plural(g.parameters.size(), "parameter") + ", " +
         plural(g.constants.size(), "constant") + ", " + plural(g.nodes.size(), "node") + ", " +
         plural(g.outputs.size(), "output") + "\n";
  out += "parameter elements: " + std::to_string(elements) + (all_known ? "" : " (plus parameters of unknown shape)") + "\n";
  auto leaf_line = [](const graph_leaf& l) {
    std::string s = "  " + (l.scope.empty() ? l.name : l.scope + "/" + l.name) + ": " + graph_type_string(l.type);
    if (l.value) s += " (value " + graph_shape_string(l.value->extents) + " embedded)";
    return s + "\n";
  };
  if (!g.inputs.empty()) {
    out += "inputs:\n";
    for (const auto& l : g.inputs) out += leaf_line(l);
  }
  if (!g.parameters.empty()) {
    out += "parameters:\n";
    for (const auto& l : g.parameters) out += leaf_line(l);
  }
  if (!g.constants.empty()) {
    out += "constants:\n";
    for (const auto& c : g.constants) out += "  " + c.name + ": " + graph_type_string(c.type) + "\n";
  }
  std::map<std::string, std::size_t> ops, scopes;
  for (const auto& n : g.nodes) {
    ++ops[n.op];
    const std::string_view s = scope_of_name(n.name);
    if (!s.empty()) ++scopes[std::string(s)];
  }
  if (!ops.empty()) {
    out += "ops:\n";
    for (const auto& [op, n] : ops) out += "  " + op + ": " + std::to_string(n) + "\n";
  }
  if (!scopes.empty()) {
    out += "scopes:\n";
    for (const auto& [s, n] : scopes) out += "  " + s + ": " + plural(n, "node") + "\n";
  }
  out += "outputs:\n";
  for (std::size_t k = 0; k < g.outputs.size(); ++k)
    out += "  " + std::to_string(k) + ": " + g.describe_value(g.outputs[k]) + " : " +
           graph_type_string(g.type_of(g.outputs[k])) + "\n";
  return out;
}

}  // namespace symflow
