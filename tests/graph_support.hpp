#pragma once
// Shared by the graph tests: the graph printed back in to_string's format, and a check that a
// graph lowered from expressions prints like them, shares identical nodes once and round-trips.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <stdexcept>
#include <symflow/graph/all.hpp>
#include <symflow/io/json.hpp>
#include <symflow/symflow.hpp>

namespace symflow::testing {

inline const graph_node& node_named(const graph& g, std::string_view op, int occurrence = 0) {
  for (const auto& n : g.nodes)
    if (n.op == op && occurrence-- == 0) return n;
  throw std::runtime_error("no node " + std::string(op));
}
inline std::size_t count_op(const graph& g, std::string_view op) {
  std::size_t n = 0;
  for (const auto& x : g.nodes) n += x.op == op;
  return n;
}
inline std::vector<std::int64_t> ints(std::initializer_list<std::int64_t> v) { return v; }

// The graph printed the way to_string prints an expression type: an independent check that the
// lowering kept every op, operand, literal value, leaf name, type and printed attribute.
inline std::string graph_string(const graph& g, std::uint32_t id) {
  const std::size_t ni = g.inputs.size(), np = g.parameters.size(), nc = g.constants.size();
  if (id < ni) return g.inputs[id].name + ":" + graph_type_string(g.inputs[id].type);
  if (id < ni + np) return g.parameters[id - ni].name + ":" + graph_type_string(g.parameters[id - ni].type);
  if (id < ni + np + nc) return "constant:" + graph_type_string(g.constants[id - ni - np].type);
  const graph_node& n = g.nodes[id - g.first_node_id()];
  if (n.is_literal()) {
    std::ostringstream os;
    const attribute_value& v = *n.attribute("value");
    switch (n.type.type) {
      case dtype::f32: os << static_cast<float>(std::get<double>(v)); break;
      case dtype::f64: os << std::get<double>(v); break;
      case dtype::i32: case dtype::i64: os << std::get<std::int64_t>(v); break;
      case dtype::boolean: os << (std::get<bool>(v) ? "true" : "false"); break;
      default: os << dtype_name(n.type.type) << " literal"; break;  // literals are of the compute dtypes
    }
    return os.str();
  }
  std::string out = n.op + "(";
  for (std::size_t k = 0; k < n.inputs.size(); ++k) out += (k ? ", " : "") + graph_string(g, n.inputs[k]);
  std::string attrs;
  if (n.attribute("axes") && n.attribute("keepdims")) {  // a reduction
    const auto& axes = std::get<std::vector<std::int64_t>>(*n.attribute("axes"));
    if (axes.size() != g.type_of(n.inputs[0]).shape.size()) {
      attrs = "axes=[";
      for (std::size_t i = 0; i < axes.size(); ++i) attrs += (i ? "," : "") + std::to_string(axes[i]);
      attrs += "]";
    }
    if (std::get<bool>(*n.attribute("keepdims"))) attrs += std::string(attrs.empty() ? "" : ", ") + "keepdims";
  } else if (const op_schema* schema = find_op_schema(n.op); schema && schema->prints_attributes) {
    for (const attribute_spec& spec : schema->attributes) {  // key=value in the op's order, as to_string
      const attribute_value& v = *n.attribute(spec.key);
      attrs += (attrs.empty() ? "" : ", ") + std::string(spec.key) + "=";
      if (const bool* b = std::get_if<bool>(&v)) attrs += *b ? "true" : "false";
      else if (const std::int64_t* i = std::get_if<std::int64_t>(&v)) attrs += std::to_string(*i);
      else ADD_FAILURE() << n.op << ": printed attribute " << spec.key << " is neither a flag nor an integer";
    }
  }
  if (!attrs.empty()) out += ", " + attrs;
  return out + ")";
}

inline std::set<std::string>& ops_seen() {
  static std::set<std::string> seen;
  return seen;
}

template <class... E>
void expect_graph_prints_like(const E&... exprs) {
  const graph g = to_graph(exprs...);
  ASSERT_EQ(g.outputs.size(), sizeof...(E));
  for (const auto& n : g.nodes) ops_seen().insert(n.op);
  // Every op survives both serialised forms exactly.
  const std::string text = save_graph_json(g);
  EXPECT_EQ(load_graph_json(text), g);
  EXPECT_EQ(save_graph_json(load_graph_json(text)), text);
  const auto bytes = save_graph_binary(g);
  EXPECT_EQ(load_graph_binary(bytes), g);
  EXPECT_EQ(save_graph_binary(load_graph_binary(bytes)), bytes);
  std::size_t k = 0;
  auto check = [&](const std::string& expected) {
    std::string got = graph_string(g, g.outputs[k]);
    got += " : ";
    got += graph_type_string(g.type_of(g.outputs[k]));
    EXPECT_EQ(got, expected) << "output " << k;
    ++k;
  };
  (check(to_string(exprs)), ...);
  // Shared once: no two nodes with one op, attributes, operands and type.
  std::set<std::string> keys;
  for (const auto& n : g.nodes) {
    std::string key = n.op + graph_type_string(n.type);
    for (auto in : n.inputs) {
      key += ',';
      key += std::to_string(in);
    }
    for (const auto& a : n.attributes) key += ";" + a.key + "=" + std::visit([](const auto& v) {
      std::ostringstream os;
      if constexpr (requires { os << v; }) os << v;
      else if constexpr (std::is_same_v<std::decay_t<decltype(v)>, subgraph>) os << "graph of " << v.body->nodes.size();
      else for (auto x : v) os << x << ' ';
      return os.str();
    }, a.value);
    EXPECT_TRUE(keys.insert(key).second) << "duplicated node " << key;
  }
}

inline std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t p = 0; (p = s.find(from, p)) != std::string::npos; p += to.size()) s.replace(p, from.size(), to);
  return s;
}

}  // namespace symflow::testing
