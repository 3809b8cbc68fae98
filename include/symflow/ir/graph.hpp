#pragma once
// The graph value: the runtime mirror of an expression type (see docs/graph.md).
//
// Values are numbered in one space, in this order: inputs (placeholders), parameters (variables),
// constants, then one value per node. A node may only read values numbered before it, so the node
// list is topologically ordered by construction and a cycle cannot be expressed.
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../core/shape.hpp"
#include "../core/tensor.hpp"
#include "../expr/node_info.hpp"

namespace symflow {

// A graph file or graph value is malformed; the message names the problem and where it is.
class graph_error : public error {
 public:
  using error::error;
};

// Unknown extents (dyn) are -1.
inline constexpr std::int64_t unknown_extent = -1;

// The dtype and shape of one value.
struct graph_type {
  dtype type = dtype::f32;
  std::vector<std::int64_t> shape;
  bool operator==(const graph_type&) const = default;
};

// Where the user code that built a node was written; line 0 when unknown.
struct graph_location {
  std::string file;
  std::uint32_t line = 0;
  bool operator==(const graph_location&) const = default;
};

// Tensor elements in C order, stored as their little-endian bytes (bool: one byte, 0 or 1).
struct graph_tensor {
  dtype type = dtype::f32;
  std::vector<std::int64_t> extents;
  std::vector<unsigned char> bytes;
  bool operator==(const graph_tensor&) const = default;

  std::size_t element_count() const {
    std::size_t n = 1;
    for (auto e : extents) n *= static_cast<std::size_t>(e);
    return n;
  }
};

struct graph;

// A graph held by a node: the body of a scan or a while loop, a branch of a cond
// (ir/control_flow/). Immutable once built, so copies of the node share it. Two compare equal when
// their graphs do.
struct subgraph {
  std::shared_ptr<const graph> body;
  bool operator==(const subgraph& o) const;  // below, where graph is complete
};

// Attribute values: flags, integers (extents, axes, depths), numbers (literal values), dtype names
// and other strings, integer lists (axes, permutations, target shapes with -1 for dyn), graphs.
using attribute_value =
    std::variant<bool, std::int64_t, double, std::string, std::vector<std::int64_t>, subgraph>;

struct graph_attribute {
  std::string key;
  attribute_value value;
  // Numbers compare by their bits, so a graph holding a NaN literal equals its copy.
  bool operator==(const graph_attribute& o) const {
    if (key != o.key || value.index() != o.value.index()) return false;
    if (const double* d = std::get_if<double>(&value))
      return std::bit_cast<std::uint64_t>(*d) == std::bit_cast<std::uint64_t>(std::get<double>(o.value));
    return value == o.value;
  }
};

// Turns the values an op's visit_attributes reports into graph attributes.
struct attribute_collector {
  std::vector<graph_attribute>* out;
  void operator()(std::string_view k, bool v) const { out->push_back({std::string(k), v}); }
  void operator()(std::string_view k, std::size_t v) const {
    out->push_back({std::string(k), static_cast<std::int64_t>(v)});
  }
  void operator()(std::string_view k, double v) const { out->push_back({std::string(k), v}); }
  void operator()(std::string_view k, dtype v) const { out->push_back({std::string(k), std::string(dtype_name(v))}); }
  template <std::size_t N>
  void operator()(std::string_view k, const std::array<std::size_t, N>& v) const {
    std::vector<std::int64_t> list;
    for (std::size_t x : v) list.push_back(x == dyn ? unknown_extent : static_cast<std::int64_t>(x));
    out->push_back({std::string(k), std::move(list)});
  }
};


// A placeholder (input) or variable (parameter).
struct graph_leaf {
  std::string name;   // the feed / parameter-store key
  std::string scope;  // "dense1/block" for a leaf built inside those scopes, "" otherwise
  graph_type type;
  graph_location where;
  std::optional<graph_tensor> value;  // parameters only, when embedded
  bool operator==(const graph_leaf&) const = default;
};

struct graph_constant {
  std::string name;  // scoped name, e.g. "dense1/constant"
  graph_type type;   // the expression's static type (may have unknown extents)
  graph_location where;
  graph_tensor data;
  bool operator==(const graph_constant&) const = default;
};

// A literal is a graph node kind of its own (a scalar value written in the node's attributes), not an
// op: it has no runtime op and no derivative rule.
inline constexpr std::string_view literal_node_op = "literal";

// out = op[attributes](inputs...)
struct graph_node {
  std::string op;    // the op's own name: "add", "matmul", "sum", "transpose", "literal", ...
  std::string name;  // scoped name: "dense1/matmul"
  std::vector<graph_attribute> attributes;
  std::vector<std::uint32_t> inputs;  // value ids
  graph_type type;
  graph_location where;
  bool operator==(const graph_node&) const = default;

  bool is_literal() const { return op == literal_node_op; }

  const attribute_value* attribute(std::string_view key) const {
    for (const auto& a : attributes)
      if (a.key == key) return &a.value;
    return nullptr;
  }
};

struct graph {
  std::vector<graph_leaf> inputs;
  std::vector<graph_leaf> parameters;
  std::vector<graph_constant> constants;
  std::vector<graph_node> nodes;
  std::vector<std::uint32_t> outputs;
  bool operator==(const graph&) const = default;

  std::size_t value_count() const { return inputs.size() + parameters.size() + constants.size() + nodes.size(); }
  std::uint32_t first_node_id() const {
    return static_cast<std::uint32_t>(inputs.size() + parameters.size() + constants.size());
  }
  // The type of any value by id.
  const graph_type& type_of(std::uint32_t id) const {
    std::size_t i = id;
    if (i < inputs.size()) return inputs[i].type;
    i -= inputs.size();
    if (i < parameters.size()) return parameters[i].type;
    i -= parameters.size();
    if (i < constants.size()) return constants[i].type;
    i -= constants.size();
    if (i < nodes.size()) return nodes[i].type;
    throw graph_error("graph: no value with id " + std::to_string(id));
  }
  // "input 'x'", "parameter 'W'", "constant 'dense1/constant'", "node 4 'dense1/add' (add)".
  std::string describe_value(std::uint32_t id) const {
    std::size_t i = id;
    if (i < inputs.size()) return "input '" + inputs[i].name + "'";
    i -= inputs.size();
    if (i < parameters.size()) return "parameter '" + parameters[i].name + "'";
    i -= parameters.size();
    if (i < constants.size()) return "constant '" + constants[i].name + "'";
    i -= constants.size();
    if (i < nodes.size()) return "node " + std::to_string(id) + " '" + nodes[i].name + "' (" + nodes[i].op + ")";
    return "value " + std::to_string(id);
  }
};

inline bool subgraph::operator==(const subgraph& o) const {
  return body == o.body || (body && o.body && *body == *o.body);
}

// The graph without the nodes no output depends on, the others renumbered in their order. Leaves
// (inputs, parameters, constants) all stay: they are the graph's interface, and a caller's feeds
// and stores name them whether or not an output reads them. Node inputs refer to earlier ids
// (validate), so one backward walk finds every live node.
inline graph without_dead_nodes(const graph& g) {
  const std::uint32_t first = g.first_node_id();
  std::vector<bool> live(g.value_count(), false);
  for (auto o : g.outputs)
    if (o < live.size()) live[o] = true;
  for (std::size_t k = g.nodes.size(); k-- > 0;)
    if (live[first + k])
      for (auto i : g.nodes[k].inputs)
        if (i < live.size()) live[i] = true;
  graph out;
  out.inputs = g.inputs;
  out.parameters = g.parameters;
  out.constants = g.constants;
  std::vector<std::uint32_t> id(g.value_count());
  for (std::uint32_t i = 0; i < first; ++i) id[i] = i;
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    if (!live[first + k]) continue;
    id[first + k] = first + std::uint32_t(out.nodes.size());
    graph_node n = g.nodes[k];
    for (auto& i : n.inputs) i = id[i];
    out.nodes.push_back(std::move(n));
  }
  for (auto o : g.outputs) out.outputs.push_back(id[o]);
  return out;
}

// --- conversions between typed tensors and graph_tensor ------------------------------------------

template <class T, class S>
graph_tensor to_graph_tensor(const tensor<T, S>& t) {
  graph_tensor out;
  out.type = dtype_v<T>;
  out.extents.assign(t.extents().begin(), t.extents().end());
  out.bytes.resize(t.size() * sizeof(T));
  if (t.size()) std::memcpy(out.bytes.data(), t.data(), out.bytes.size());
  return out;
}

template <class T, shape_spec S>
tensor<T, S> from_graph_tensor(const graph_tensor& g) {
  if (g.type != dtype_v<T>)
    throw value_error("graph tensor holds " + std::string(dtype_name(g.type)) + " values, not " +
                      std::string(dtype_name(dtype_v<T>)));
  if (g.extents.size() != S::rank)
    throw shape_error("graph tensor has rank " + std::to_string(g.extents.size()) + ", expected " +
                      shape_string<S>());
  extents_t<S::rank> e{};
  for (std::size_t i = 0; i < S::rank; ++i) e[i] = static_cast<std::size_t>(g.extents[i]);
  tensor<T, S> out(e, uninitialized);
  if (g.bytes.size() != out.size() * sizeof(T)) throw graph_error("graph tensor: element bytes do not match its extents");
  if (out.size()) std::memcpy(out.data(), g.bytes.data(), g.bytes.size());
  return out;
}

// "[?,784]"
inline std::string graph_shape_string(const std::vector<std::int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ",";
    out += shape[i] < 0 ? std::string("?") : std::to_string(shape[i]);
  }
  return out + "]";
}
inline std::string graph_type_string(const graph_type& t) {
  return std::string(dtype_name(t.type)) + graph_shape_string(t.shape);
}

// The scope part of a scoped name: "dense1/block" for "dense1/block/add", "" for "add".
inline std::string_view scope_of_name(std::string_view scoped) {
  const auto slash = scoped.rfind('/');
  return slash == std::string_view::npos ? std::string_view{} : scoped.substr(0, slash);
}

namespace detail {
// The data's extents must agree with the declared type wherever the type knows an extent.
inline void check_data_fits_type(std::string_view context, const std::string& who, const graph_type& type,
                                 const graph_tensor& data) {
  bool ok = data.type == type.type && data.extents.size() == type.shape.size();
  for (std::size_t i = 0; ok && i < data.extents.size(); ++i)
    ok = type.shape[i] == unknown_extent || type.shape[i] == data.extents[i];
  if (!ok)
    throw graph_error(std::string(context) + ": " + who + ": its data " + std::string(dtype_name(data.type)) + graph_shape_string(data.extents) +
                      " does not fit its type " + graph_type_string(type));
}
}  // namespace detail

}  // namespace symflow
