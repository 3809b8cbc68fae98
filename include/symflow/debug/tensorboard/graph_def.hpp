#pragma once
// The graph value as a TensorFlow GraphDef, for TensorBoard's graph dashboard.
//
// One NodeDef per value: inputs become Placeholder, parameters Variable, constants Const, and each
// node keeps symflow's own op name ("matmul", "add", ...). Names are the scoped names, whose '/'
// TensorBoard reads as nesting, so `scope("dense1", ...)` draws as one collapsible dense1 box.
// Every NodeDef carries `_output_shapes` (one shape, -1 for a dyn extent), which TensorBoard writes
// on the edges, and the element type as TensorFlow spells it ("dtype" on leaves, "T" on ops).
#include <cstdint>
#include <map>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <variant>
#include <vector>

#include "../../ir/graph.hpp"
#include "protobuf.hpp"

namespace symflow::tensorboard {

// TensorFlow's DataType enum (types.proto).
enum class tf_data_type : std::int32_t { dt_float = 1, dt_double = 2, dt_int32 = 3, dt_string = 7, dt_int64 = 9, dt_bool = 10 };

// A dtype's code is its row's `tensorflow` column (core/dtype.hpp).
inline tf_data_type tf_data_type_of(dtype d) {
  if (const dtype_info* row = find_dtype_info(d)) return static_cast<tf_data_type>(row->tensorflow);
  throw graph_error("tensorboard: unknown dtype");
}

// TensorShapeProto: one Dim{size} per extent; a scalar has no dims (and is not unknown_rank).
inline std::string tensor_shape_proto(const std::vector<std::int64_t>& shape) {
  proto_writer w;
  for (std::int64_t extent : shape) {
    proto_writer dim;
    dim.int64_field(1, extent);
    w.message_field(2, dim);
  }
  return w.take();
}

// The names the GraphDef gives each value, by value id. TensorFlow requires unique node names,
// while symflow's scoped names repeat (two adds in one scope are both "dense1/add"); a repeat gets
// TensorFlow's own suffix style, "dense1/add_1", skipping any suffix another value already uses.
inline std::vector<std::string> graph_def_node_names(const graph& g) {
  std::vector<std::string> wanted;
  wanted.reserve(g.value_count());
  auto leaf_name = [](const graph_leaf& l) { return l.scope.empty() ? l.name : l.scope + "/" + l.name; };
  for (const auto& l : g.inputs) wanted.push_back(leaf_name(l));
  for (const auto& l : g.parameters) wanted.push_back(leaf_name(l));
  for (const auto& c : g.constants) wanted.push_back(c.name);
  for (const auto& n : g.nodes) wanted.push_back(n.name);

  // Every wanted name is reserved up front, so "add_1" written by the user is never taken by a suffix.
  std::unordered_set<std::string> taken(wanted.begin(), wanted.end());
  std::unordered_set<std::string> used;
  std::vector<std::string> names;
  names.reserve(wanted.size());
  for (const auto& name : wanted) {
    if (used.insert(name).second) {
      names.push_back(name);
      continue;
    }
    for (std::size_t suffix = 1;; ++suffix) {
      std::string candidate = name + "_" + std::to_string(suffix);
      if (!taken.count(candidate) && used.insert(candidate).second) {
        names.push_back(std::move(candidate));
        break;
      }
    }
  }
  return names;
}

namespace detail {
inline std::string attr_value_proto(const attribute_value& value) {
  proto_writer w;
  std::visit(
      [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, bool>) w.bool_field(5, v);
        else if constexpr (std::is_same_v<V, std::int64_t>) w.int64_field(3, v);
        else if constexpr (std::is_same_v<V, double>) w.float_field(4, static_cast<float>(v));  // AttrValue.f is a float
        else if constexpr (std::is_same_v<V, std::string>) w.bytes_field(2, v);
        else if constexpr (std::is_same_v<V, subgraph>)  // a control-flow body: shown by its size
          w.bytes_field(2, "graph of " + std::to_string(v.body->nodes.size()) + " nodes");
        else {
          proto_writer list;
          list.packed_int64s_field(3, v);
          w.message_field(1, list);
        }
      },
      value);
  return w.take();
}

inline std::string node_def_proto(const std::string& name, const std::string& op, const std::vector<std::string>& inputs,
                                  const std::map<std::string, std::string>& attributes) {
  proto_writer w;
  w.bytes_field(1, name);
  w.bytes_field(2, op);
  for (const auto& input : inputs) w.bytes_field(3, input);
  for (const auto& [key, value] : attributes) {  // map<string, AttrValue>: repeated {key = 1, value = 2}
    proto_writer entry;
    entry.bytes_field(1, key);
    entry.bytes_field(2, value);
    w.bytes_field(5, entry.bytes());
  }
  return w.take();
}

inline std::string output_shapes_attr(const graph_type& type) {
  proto_writer list;
  list.bytes_field(7, tensor_shape_proto(type.shape));
  proto_writer w;
  w.message_field(1, list);
  return w.take();
}

inline std::string type_attr(dtype d) {
  proto_writer w;
  w.enum_field(6, static_cast<std::int32_t>(tf_data_type_of(d)));
  return w.take();
}
}  // namespace detail

// GraphDef.versions.producer. TensorBoard draws a graph whatever its producer; TensorFlow's own
// importers would check it against their op versions, but these graphs hold symflow ops, which no
// TensorFlow version can run anyway.
inline constexpr std::int64_t graph_def_producer_version = 1;

// The serialised GraphDef (graph.proto) of a graph value.
inline std::string to_graph_def(const graph& g) {
  const std::vector<std::string> names = graph_def_node_names(g);
  proto_writer graph_def;
  std::uint32_t id = 0;
  auto leaf = [&](const graph_type& type, const char* op) {
    std::map<std::string, std::string> attributes{{"dtype", detail::type_attr(type.type)},
                                                  {"_output_shapes", detail::output_shapes_attr(type)}};
    graph_def.bytes_field(1, detail::node_def_proto(names[id++], op, {}, attributes));
  };
  for (const auto& l : g.inputs) leaf(l.type, "Placeholder");
  for (const auto& l : g.parameters) leaf(l.type, "Variable");
  for (const auto& c : g.constants) leaf(c.type, "Const");
  for (const auto& n : g.nodes) {
    std::map<std::string, std::string> attributes;
    // The op's own attributes (axes, perm, literal values, ...) show in the node's info panel.
    for (const auto& a : n.attributes) attributes[a.key] = detail::attr_value_proto(a.value);
    attributes["T"] = detail::type_attr(n.type.type);
    attributes["_output_shapes"] = detail::output_shapes_attr(n.type);
    std::vector<std::string> inputs;
    inputs.reserve(n.inputs.size());
    for (std::uint32_t operand : n.inputs) {
      if (operand >= id) throw graph_error("to_graph_def: " + g.describe_value(id) + " reads a later or missing value " + std::to_string(operand));
      inputs.push_back(names[operand]);
    }
    graph_def.bytes_field(1, detail::node_def_proto(names[id++], n.op, inputs, attributes));
  }
  proto_writer versions;
  versions.int64_field(1, graph_def_producer_version);
  graph_def.message_field(4, versions);
  return graph_def.take();
}

}  // namespace symflow::tensorboard
