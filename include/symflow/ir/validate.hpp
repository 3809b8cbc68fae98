#pragma once
// Checks that a graph value is well formed: every op known with the right operand count, attributes
// and operand dtypes (by the op's own dtype rule, ir/op_registry.hpp's dtype_rule: a kernel reads its
// operands as the types its rule admits), every reference to a value defined before it, every shape
// representable. Loaders run it on everything they read; the message names the offending entry.
#include <cstdint>
#include <limits>
#include <set>
#include <string>

#include "../core/excerpt.hpp"
#include "graph.hpp"
#include "op_registry.hpp"
#include "control_flow/list.hpp"

namespace symflow {

inline constexpr std::size_t graph_max_rank = 32;
// Extents and element counts above this are refused (it keeps byte counts of any dtype in range).
inline constexpr std::uint64_t graph_max_elements = std::uint64_t(1) << 56;
// Sub-graphs (control-flow bodies) may hold sub-graphs of their own, this many levels deep.
inline constexpr std::size_t graph_max_nesting = 8;

namespace detail {
[[noreturn]] inline void graph_fail(std::string_view context, const std::string& what) {
  throw graph_error(std::string(context) + ": " + what);
}

// Element count of known extents, refusing negative extents (other than -1 where allowed) and
// products past graph_max_elements.
inline std::uint64_t checked_element_count(std::string_view context, const std::string& who,
                                           const std::vector<std::int64_t>& extents, bool allow_unknown) {
  if (extents.size() > graph_max_rank)
    graph_fail(context, who + ": rank " + std::to_string(extents.size()) + " exceeds the maximum of " +
                            std::to_string(graph_max_rank));
  std::uint64_t n = 1;
  bool zero = false;
  for (std::size_t i = 0; i < extents.size(); ++i) {
    const std::int64_t e = extents[i];
    if (e == unknown_extent && allow_unknown) continue;
    if (e < 0)
      graph_fail(context, who + ": extent " + std::to_string(i) + " is " + std::to_string(e) +
                              (allow_unknown ? " (extents are -1 for unknown, or >= 0)" : " (extents are >= 0)"));
    if (static_cast<std::uint64_t>(e) > graph_max_elements)
      graph_fail(context, who + ": shape overflow: extent " + std::to_string(i) + " is " + std::to_string(e));
    if (e == 0) zero = true;
    else if (n > graph_max_elements / static_cast<std::uint64_t>(e))
      graph_fail(context, who + ": shape overflow: " + graph_shape_string(extents) + " has more than 2^56 elements");
    else n *= static_cast<std::uint64_t>(e);
  }
  return zero ? 0 : n;
}

inline void check_tensor_data(std::string_view context, const std::string& who, const graph_tensor& t) {
  const std::uint64_t n = checked_element_count(context, who, t.extents, false);
  const std::uint64_t want = n * dtype_size(t.type);
  if (t.bytes.size() != want)
    graph_fail(context, who + ": " + std::to_string(t.bytes.size()) + " bytes of data for " + std::to_string(n) +
                            " " + std::string(dtype_name(t.type)) + " elements (" + std::to_string(want) + " expected)");
  if (t.type == dtype::boolean)
    for (std::size_t i = 0; i < t.bytes.size(); ++i)
      if (t.bytes[i] > 1) graph_fail(context, who + ": bool element " + std::to_string(i) + " is neither 0 nor 1");
}


inline bool attribute_has_kind(const attribute_value& v, attribute_kind k) {
  switch (k) {
    case attribute_kind::boolean: return std::holds_alternative<bool>(v);
    case attribute_kind::integer: return std::holds_alternative<std::int64_t>(v);
    case attribute_kind::number:
      return std::holds_alternative<double>(v) || std::holds_alternative<std::int64_t>(v) ||
             std::holds_alternative<bool>(v);
    case attribute_kind::dtype_name:
      return std::holds_alternative<std::string>(v) && dtype_from_name(std::get<std::string>(v)).has_value();
    case attribute_kind::integers: return std::holds_alternative<std::vector<std::int64_t>>(v);
    case attribute_kind::graph: return std::holds_alternative<subgraph>(v) && std::get<subgraph>(v).body != nullptr;
  }
  return false;
}
}  // namespace detail

namespace detail {
inline void validate_at_depth(const graph& g, std::string_view context, std::size_t depth);
}

// Throws graph_error("<context>: <what is wrong, and where>") on the first problem found.
inline void validate(const graph& g, std::string_view context = "graph") { detail::validate_at_depth(g, context, 0); }

// A graph held by a node (`depth` graphs deep) is validated as a graph of its own, and the node's
// operands against its inputs by the control-flow op's type rule.
inline void detail::validate_at_depth(const graph& g, std::string_view context, std::size_t depth) {
  using detail::graph_fail;
  if (depth > graph_max_nesting)
    graph_fail(context, "sub-graphs nest deeper than " + std::to_string(graph_max_nesting) + " levels");
  const std::size_t count = g.value_count();
  if (count > std::numeric_limits<std::uint32_t>::max()) graph_fail(context, "too many values");

  std::set<std::string, std::less<>> leaf_names;
  auto check_leaf = [&](const graph_leaf& leaf, const char* what, std::size_t i) {
    const std::string who = std::string(what) + " " + std::to_string(i) + " '" + detail::excerpt(leaf.name) + "'";
    if (leaf.name.empty()) graph_fail(context, std::string(what) + " " + std::to_string(i) + " has an empty name");
    if (!leaf_names.insert(leaf.name).second)
      graph_fail(context, who + ": the name is used by another input or parameter");
    detail::checked_element_count(context, who, leaf.type.shape, true);
    if (leaf.value) {
      detail::check_tensor_data(context, who, *leaf.value);
      detail::check_data_fits_type(context, who, leaf.type, *leaf.value);
    }
  };
  for (std::size_t i = 0; i < g.inputs.size(); ++i) {
    check_leaf(g.inputs[i], "input", i);
    if (g.inputs[i].value) graph_fail(context, "input " + std::to_string(i) + " '" + detail::excerpt(g.inputs[i].name) + "' has a value");
  }
  for (std::size_t i = 0; i < g.parameters.size(); ++i) check_leaf(g.parameters[i], "parameter", i);
  for (std::size_t i = 0; i < g.constants.size(); ++i) {
    const auto& c = g.constants[i];
    const std::string who = "constant " + std::to_string(i) + " '" + detail::excerpt(c.name) + "'";
    detail::checked_element_count(context, who, c.type.shape, true);
    detail::check_tensor_data(context, who, c.data);
    detail::check_data_fits_type(context, who, c.type, c.data);
  }

  const std::uint32_t first = g.first_node_id();
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const graph_node& n = g.nodes[i];
    const std::uint32_t id = first + static_cast<std::uint32_t>(i);
    const std::string who = "node " + std::to_string(id) + " '" + detail::excerpt(n.name) + "' (" + detail::excerpt(n.op) + ")";
    const op_schema* schema = find_op_schema(n.op);
    if (!schema) graph_fail(context, who + ": unknown op '" + detail::excerpt(n.op) + "'");
    if (n.inputs.size() < schema->min_inputs || n.inputs.size() > schema->max_inputs) {
      std::string expected = std::to_string(schema->min_inputs);
      if (schema->max_inputs == unbounded_inputs) expected += " or more";
      else if (schema->max_inputs != schema->min_inputs) expected += " to " + std::to_string(schema->max_inputs);
      graph_fail(context, who + ": " + std::to_string(n.inputs.size()) + " inputs, op " + n.op + " takes " + expected);
    }
    for (std::size_t k = 0; k < n.inputs.size(); ++k) {
      const std::uint32_t ref = n.inputs[k];
      if (ref >= count)
        graph_fail(context, who + ": input " + std::to_string(k) + " refers to value " + std::to_string(ref) +
                                ", which does not exist (dangling reference; the graph has " + std::to_string(count) +
                                " values)");
      if (ref >= id)
        graph_fail(context, who + ": input " + std::to_string(k) + " refers to value " + std::to_string(ref) +
                                ", which is not defined before it (a cycle or forward reference)");
    }
    if (schema->dtypes.operands) {
      std::vector<dtype> in;
      for (const std::uint32_t ref : n.inputs) in.push_back(g.type_of(ref).type);
      if (!schema->dtypes.result(in)) graph_fail(context, who + ": " + schema->dtypes.refusal(n.op, in));
    }
    for (std::size_t a = 0; a < n.attributes.size(); ++a) {
      const auto& attr = n.attributes[a];
      const attribute_spec* spec = nullptr;
      for (const auto& s : schema->attributes)
        if (s.key == attr.key) spec = &s;
      if (!spec) graph_fail(context, who + ": unknown attribute '" + detail::excerpt(attr.key) + "' for op " + detail::excerpt(n.op));
      for (std::size_t b = 0; b < a; ++b)
        if (n.attributes[b].key == attr.key) graph_fail(context, who + ": attribute '" + attr.key + "' appears twice");
      if (!detail::attribute_has_kind(attr.value, spec->kind))
        graph_fail(context, who + ": attribute '" + detail::excerpt(attr.key) + "' must be " + std::string(attribute_kind_name(spec->kind)));
    }
    for (const auto& s : schema->attributes)
      if (!s.optional && !n.attribute(s.key)) graph_fail(context, who + ": missing attribute '" + std::string(s.key) + "'");
    for (const auto& attr : n.attributes)
      if (const subgraph* body = std::get_if<subgraph>(&attr.value))
        validate_at_depth(*body->body, std::string(context) + ": " + who + ": " + detail::excerpt(attr.key), depth + 1);
    if (control_flow::is_control_flow(n.op)) {
      std::vector<graph_type> in;
      for (const std::uint32_t ref : n.inputs) in.push_back(g.type_of(ref));
      try {
        control_flow::visit(n.op, [&](auto op) {
          const graph_type t = op.result_type(n, in, who);
          if (!control_flow::type_fits(n.type, t))
            graph_fail(context, who + ": its type is " + graph_type_string(n.type) + ", its operands and sub-graphs give " +
                                    graph_type_string(t));
        });
      } catch (const graph_error& e) {
        if (std::string_view(e.what()).starts_with(context)) throw;
        graph_fail(context, e.what());
      }
    }
    detail::checked_element_count(context, who, n.type.shape, true);
    if (schema->kind == node_kind::literal) {
      if (!n.type.shape.empty()) graph_fail(context, who + ": a literal is a scalar, not " + graph_type_string(n.type));
      const attribute_value& v = *n.attribute("value");
      const bool ok = n.type.type == dtype::boolean ? std::holds_alternative<bool>(v)
                      : is_floating_dtype(n.type.type) ? std::holds_alternative<double>(v)
                                                       : std::holds_alternative<std::int64_t>(v);
      if (!ok) graph_fail(context, who + ": its value does not match its dtype " + std::string(dtype_name(n.type.type)));
    }
  }
  for (std::size_t k = 0; k < g.outputs.size(); ++k)
    if (g.outputs[k] >= count)
      graph_fail(context, "output " + std::to_string(k) + " refers to value " + std::to_string(g.outputs[k]) +
                              ", which does not exist (dangling reference; the graph has " + std::to_string(count) +
                              " values)");
}

}  // namespace symflow
