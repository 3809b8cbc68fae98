#pragma once
// to_dot(graph): Graphviz text. One cluster per name scope (nested scopes nest), inputs as
// ellipses, parameters as 3-D boxes, constants as notes, outputs as double circles; every edge is
// labelled with the dtype and shape of the value it carries.
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "../ir/graph.hpp"

namespace symflow {

namespace detail {
inline std::string dot_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

struct dot_scope {
  std::string name;  // full path, "" for the root
  std::vector<std::string> statements;
  std::vector<std::pair<std::string, std::unique_ptr<dot_scope>>> children;  // in first-use order

  dot_scope& child(std::string_view path) {
    if (path.empty()) return *this;
    const auto slash = path.find('/');
    const std::string head(path.substr(0, slash));
    dot_scope* c = nullptr;
    for (auto& [k, v] : children)
      if (k == head) c = v.get();
    if (!c) {
      children.emplace_back(head, std::make_unique<dot_scope>());
      c = children.back().second.get();
      c->name = name.empty() ? head : name + "/" + head;
    }
    return slash == std::string_view::npos ? *c : c->child(path.substr(slash + 1));
  }
  void emit(std::string& out, int depth, int& cluster) const {
    const std::string pad(std::size_t(depth) * 2, ' ');
    for (const auto& s : statements) out += pad + s + "\n";
    for (const auto& [k, c] : children) {
      out += pad + "subgraph cluster_" + std::to_string(cluster++) + " {\n";
      out += pad + "  label=\"" + dot_escape(c->name) + "\";\n";
      c->emit(out, depth + 1, cluster);
      out += pad + "}\n";
    }
  }
};
}  // namespace detail

inline std::string to_dot(const graph& g) {
  using detail::dot_escape;
  detail::dot_scope root;
  std::uint32_t id = 0;
  auto leaf = [&](const graph_leaf& l, const char* shape) {
    root.child(l.scope).statements.push_back("v" + std::to_string(id++) + " [label=\"" + dot_escape(l.name) + "\\n" +
                                             graph_type_string(l.type) + "\", shape=" + shape + "];");
  };
  for (const auto& l : g.inputs) leaf(l, "ellipse");
  for (const auto& l : g.parameters) leaf(l, "box3d");
  for (const auto& c : g.constants)
    root.child(scope_of_name(c.name))
        .statements.push_back("v" + std::to_string(id++) + " [label=\"constant\\n" + graph_type_string(c.type) +
                              "\", shape=note];");
  for (const auto& n : g.nodes) {
    std::string label = n.op;
    if (n.is_literal()) {
      if (const auto* v = n.attribute("value")) {
        std::visit(
            [&](const auto& x) {
              using V = std::decay_t<decltype(x)>;
              if constexpr (std::is_same_v<V, bool>) label = x ? "true" : "false";
              else if constexpr (std::is_same_v<V, std::int64_t>) label = std::to_string(x);
              else if constexpr (std::is_same_v<V, double>) {
                std::ostringstream os;
                os.precision(9);
                os << x;
                label = os.str();
              }
            },
            *v);
      }
    }
    root.child(scope_of_name(n.name))
        .statements.push_back("v" + std::to_string(id++) + " [label=\"" + dot_escape(label) + "\"];");
  }
  std::string out = "digraph symflow {\n  rankdir=TB;\n  node [shape=box, fontname=\"Helvetica\"];\n"
                    "  edge [fontname=\"Helvetica\", fontsize=10];\n";
  int cluster = 0;
  root.emit(out, 1, cluster);
  const std::uint32_t first = g.first_node_id();
  for (std::size_t i = 0; i < g.nodes.size(); ++i)
    for (auto in : g.nodes[i].inputs)
      out += "  v" + std::to_string(in) + " -> v" + std::to_string(first + i) + " [label=\"" +
             graph_type_string(g.type_of(in)) + "\"];\n";
  for (std::size_t k = 0; k < g.outputs.size(); ++k) {
    out += "  out" + std::to_string(k) + " [label=\"output " + std::to_string(k) + "\", shape=doublecircle];\n";
    out += "  v" + std::to_string(g.outputs[k]) + " -> out" + std::to_string(k) + " [label=\"" +
           graph_type_string(g.type_of(g.outputs[k])) + "\"];\n";
  }
  return out + "}\n";
}

}  // namespace symflow
