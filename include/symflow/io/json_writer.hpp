#pragma once
// Writing a graph value as JSON (the format: json.hpp, the header to include; save_graph_json is
// json_impl.hpp).
#include <cmath>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "binary.hpp"
#include "../ir/graph.hpp"
#include "json_format.hpp"

namespace symflow {
namespace detail {

inline ojson json_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

inline ojson json_tensor_values(const graph_tensor& t) {
  return visit_dtype(t.type, [&](auto zero) {
    using T = decltype(zero);
    ojson values = ojson::array();
    const std::size_t n = t.bytes.size() / sizeof(T);
    for (std::size_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        values.push_back(t.bytes[i] != 0);
      } else {
        T v;
        std::memcpy(&v, t.bytes.data() + sizeof(T) * i, sizeof(T));
        if constexpr (is_floating_dtype_v<T>) values.push_back(json_number(v));
        else values.push_back(v);
      }
    }
    return values;
  });
}

inline ojson json_tensor(const graph_tensor& t) {
  ojson o = ojson::object();
  o["shape"] = t.extents;
  o["values"] = json_tensor_values(t);
  return o;
}

// The graph's entries as JSON values, one per key of the document (a sub-graph attribute holds
// the same keys: json_graph_object).
struct json_graph_parts {
  std::vector<ojson> inputs, parameters, constants, nodes;
  ojson outputs;
};
inline json_graph_parts json_parts(const graph& g, const graph_save_options& options);

// A sub-graph attribute is {"graph": {"inputs": ..., "parameters": ..., ..., "outputs": ...}}.
inline ojson json_graph_object(const graph& g, const graph_save_options& options) {
  json_graph_parts p = json_parts(g, options);
  ojson o = ojson::object();
  o["inputs"] = std::move(p.inputs);
  o["parameters"] = std::move(p.parameters);
  o["constants"] = std::move(p.constants);
  o["nodes"] = std::move(p.nodes);
  o["outputs"] = std::move(p.outputs);
  return o;
}

inline ojson json_attribute(const attribute_value& v, const graph_save_options& options) {
  return std::visit(
      [&](const auto& x) -> ojson {
        using V = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<V, double>) return json_number(x);
        else if constexpr (std::is_same_v<V, subgraph>) {
          ojson o = ojson::object();
          o["graph"] = json_graph_object(*x.body, options);
          return o;
        } else return x;
      },
      v);
}

inline json_graph_parts json_parts(const graph& g, const graph_save_options& options) {
  json_graph_parts p;
  std::uint32_t id = 0;
  auto leaf = [&](const graph_leaf& l, bool parameter) {
    ojson o = ojson::object();
    o["id"] = id++;
    o["name"] = l.name;
    o["scope"] = l.scope;
    o["dtype"] = dtype_name(l.type.type);
    o["shape"] = l.type.shape;
    o["file"] = l.where.file;
    o["line"] = l.where.line;
    if (parameter && options.embed_parameters && l.value) o["value"] = detail::json_tensor(*l.value);
    return o;
  };
  for (const auto& l : g.inputs) p.inputs.push_back(leaf(l, false));
  for (const auto& l : g.parameters) p.parameters.push_back(leaf(l, true));
  for (const auto& c : g.constants) {
    ojson o = ojson::object();
    o["id"] = id++;
    o["name"] = c.name;
    o["dtype"] = dtype_name(c.type.type);
    o["shape"] = c.type.shape;
    o["file"] = c.where.file;
    o["line"] = c.where.line;
    o["data"] = detail::json_tensor(c.data);
    p.constants.push_back(std::move(o));
  }
  for (const auto& n : g.nodes) {
    ojson o = ojson::object();
    o["id"] = id++;
    o["op"] = n.op;
    o["name"] = n.name;
    o["inputs"] = n.inputs;
    ojson attrs = ojson::object();
    for (const auto& a : n.attributes) attrs[a.key] = detail::json_attribute(a.value, options);
    o["attrs"] = std::move(attrs);
    o["dtype"] = dtype_name(n.type.type);
    o["shape"] = n.type.shape;
    o["file"] = n.where.file;
    o["line"] = n.where.line;
    p.nodes.push_back(std::move(o));
  }
  p.outputs = g.outputs;
  return p;
}

// One entry per line at the top level (a sub-graph stays on its node's line).
inline std::string save_graph_json_unchecked(const graph& g, graph_save_options options) {
  json_graph_parts p = json_parts(g, options);
  std::string out = "{\n  \"format\": \"" + std::string(graph_json_format) + "\",\n  \"version\": " +
                    std::to_string(graph_json_version) + ",\n";
  auto list = [&](const char* key, const std::vector<ojson>& items) {
    out += std::string("  \"") + key + "\": [";
    for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ",\n    " : "\n    ") + items[i].dump();
    out += items.empty() ? "]" : "\n  ]";
    out += ",\n";
  };
  list("inputs", p.inputs);
  list("parameters", p.parameters);
  list("constants", p.constants);
  list("nodes", p.nodes);
  out += "  \"outputs\": " + p.outputs.dump() + "\n}\n";
  return out;
}

}  // namespace detail

}  // namespace symflow
