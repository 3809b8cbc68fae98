#pragma once
// to_graph(exprs...): lowers expression types (gradients are ordinary expressions) to a graph value.
// Identical subexpressions — same type and same runtime data (same_value) — become one value; the
// first occurrence met in a depth-first, operands-in-order walk gives it its name and location.
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <typeindex>
#include <typeinfo>
#include <unordered_map>

#include "../core/params.hpp"
#include "../expr/leaves.hpp"
#include "../expr/node.hpp"
#include "../expr/same_value.hpp"
#include "../expr/structural.hpp"
#include "graph.hpp"

namespace symflow {

namespace detail {

template <shape_spec S>
std::vector<std::int64_t> graph_shape_of() {
  std::vector<std::int64_t> out;
  for (std::size_t e : S::extents) out.push_back(e == dyn ? unknown_extent : static_cast<std::int64_t>(e));
  return out;
}
template <expression E>
graph_type graph_type_of() {
  return {dtype_v<value_type_of<E>>, graph_shape_of<shape_of<E>>()};
}
inline graph_location graph_location_of(const node_info& info) {
  if (!info.has_location()) return {};
  return {info.where.file_name(), static_cast<std::uint32_t>(info.where.line())};
}
inline std::string graph_scope_of(const node_info& info) {
  std::string out;
  for (std::size_t i = 0; i < info.depth; ++i) {
    if (i) out += '/';
    out += info.scopes[i];
  }
  return out;
}

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

template <class T>
attribute_value literal_attribute(T v) {
  if constexpr (std::is_same_v<T, bool>) return v;
  else if constexpr (std::is_integral_v<T>) return static_cast<std::int64_t>(v);
  else return static_cast<double>(v);
}

class graph_lowering {
 public:
  // A value while lowering: which list it is in, and its index there (ids are assigned at the end).
  enum class list : std::uint8_t { input, parameter, constant, node };
  struct ref {
    list where;
    std::uint32_t index;
  };

  template <expression E>
  ref lower(const E& e) {
    auto [lo, hi] = seen_.equal_range(std::type_index(typeid(E)));
    for (auto it = lo; it != hi; ++it)
      if (same_value(*static_cast<const E*>(it->second.node), e)) return it->second.value;
    const ref r = lower_new(e);
    seen_.emplace(std::type_index(typeid(E)), entry{&e, r});
    return r;
  }

  void add_output(ref r) { outputs_.push_back(r); }

  graph finish() {
    graph g = std::move(g_);
    auto id = [&](ref r) -> std::uint32_t {
      switch (r.where) {
        case list::input: return r.index;
        case list::parameter: return static_cast<std::uint32_t>(g.inputs.size()) + r.index;
        case list::constant: return static_cast<std::uint32_t>(g.inputs.size() + g.parameters.size()) + r.index;
        case list::node: return g.first_node_id() + r.index;
      }
      return 0;
    };
    for (std::size_t i = 0; i < g.nodes.size(); ++i)
      for (const ref& r : node_inputs_[i]) g.nodes[i].inputs.push_back(id(r));
    for (const ref& r : outputs_) g.outputs.push_back(id(r));
    // The rest of validation happens where the graph is loaded or run: evaluation lowers graphs too
    // (check_numerics, the placement log) and need not compile the op table. Leaf names are keys of
    // feeds and parameter stores, so two leaves sharing one are refused here.
    std::set<std::string_view> names;
    for (std::size_t i = 0; i < g.inputs.size(); ++i)
      if (!names.insert(g.inputs[i].name).second)
        throw graph_error("to_graph: input " + std::to_string(i) + " '" + g.inputs[i].name +
                          "': the name is used by another input or parameter");
    for (std::size_t i = 0; i < g.parameters.size(); ++i)
      if (!names.insert(g.parameters[i].name).second)
        throw graph_error("to_graph: parameter " + std::to_string(i) + " '" + g.parameters[i].name +
                          "': the name is used by another input or parameter");
    return g;
  }

 private:
  struct entry {
    const void* node;
    ref value;
  };

  template <expression E>
  ref lower_new(const E& e) {
    if constexpr (E::kind == node_kind::placeholder || E::kind == node_kind::variable) {
      graph_leaf leaf{std::string(E::name.view()), graph_scope_of(e.info), graph_type_of<E>(),
                      graph_location_of(e.info), std::nullopt};
      constexpr bool input = E::kind == node_kind::placeholder;
      auto& leaves = input ? g_.inputs : g_.parameters;
      leaves.push_back(std::move(leaf));
      return {input ? list::input : list::parameter, static_cast<std::uint32_t>(leaves.size() - 1)};
    } else if constexpr (E::kind == node_kind::constant) {
      g_.constants.push_back({e.info.scoped_name(E::op_name), graph_type_of<E>(), graph_location_of(e.info),
                              to_graph_tensor(*e.value)});
      return {list::constant, static_cast<std::uint32_t>(g_.constants.size() - 1)};
    } else if constexpr (E::kind == node_kind::literal) {
      graph_node n{std::string(E::op_name), e.info.scoped_name(E::op_name),
                   {{"value", literal_attribute(e.value)}, {"static", is_static_literal_v<E>}},
                   {}, graph_type_of<E>(), graph_location_of(e.info)};
      return push_node(std::move(n), {});
    } else if constexpr (E::kind == node_kind::elementwise && requires { E::op_type::materialises; }) {
      return lower(std::get<0>(e.args()));  // in a graph every value is stored once anyway
    } else if constexpr (E::kind == node_kind::reference) {
      return lower(std::get<0>(e.args()));
    } else if constexpr (E::kind == node_kind::kernel && requires { e.op.program->source(); }) {
      return lower_program(e);
    } else if constexpr (E::kind == node_kind::accumulation) {
      // A chain of adds over the terms; no terms is the scalar 0, which broadcasts where it is added.
      if (e.items().empty()) return lower(zero<value_type_of<E>>{});
      ref sum = lower(e.items().front());
      for (std::size_t i = 1; i < e.items().size(); ++i) {
        graph_node n{"add", e.info.scoped_name("add"), {}, {}, graph_type_of<E>(), graph_location_of(e.info)};
        sum = push_node(std::move(n), {sum, lower(e.items()[i])});
      }
      return sum;
    } else {
      std::vector<ref> inputs;
      std::apply([&](const auto&... a) { (inputs.push_back(lower(a)), ...); }, e.args());
      graph_node n{std::string(E::op_name), e.info.scoped_name(E::op_name), {}, {}, graph_type_of<E>(),
                   graph_location_of(e.info)};
      if constexpr (E::kind == node_kind::reduction) {
        std::vector<std::int64_t> axes;
        for (std::size_t i = 0; i < E::mask.size(); ++i)
          if (E::mask[i]) axes.push_back(static_cast<std::int64_t>(i));
        n.attributes.push_back({"axes", std::move(axes)});
        n.attributes.push_back({"keepdims", E::keep_dims});
      } else if constexpr (requires { e.op.visit_attributes(attribute_collector{&n.attributes}); }) {
        e.op.visit_attributes(attribute_collector{&n.attributes});
      }
      return push_node(std::move(n), std::move(inputs));
    }
  }

  // A node computed by a runtime program (symbolic/program_gradient.hpp): program_run inlines the
  // program's graph, its leaves taking the values of the node's operands; program_output is then one
  // of that graph's outputs.
  template <expression E>
  ref lower_program(const E& e) {
    if constexpr (requires { e.op.index; }) {
      const auto& run = std::get<0>(e.args());
      lower(run);
      return program_outputs_.at(lowered_object(run)).at(e.op.index);
    } else {
      std::vector<ref> operands;
      std::apply([&](const auto&... a) { (operands.push_back(lower(a)), ...); }, e.args());
      const graph& p = e.op.program->source();
      std::vector<ref> value(p.first_node_id() + p.nodes.size());
      std::uint32_t id = 0;
      for (auto k : e.op.program->leaf_operands()) value[id++] = operands.at(k);
      for (const auto& c : p.constants) {
        g_.constants.push_back(c);
        value[id++] = {list::constant, static_cast<std::uint32_t>(g_.constants.size() - 1)};
      }
      for (const auto& n : p.nodes) {
        std::vector<ref> inputs;
        for (auto i : n.inputs) inputs.push_back(value.at(i));
        graph_node copy = n;
        copy.inputs.clear();
        value[id++] = push_node(std::move(copy), std::move(inputs));
      }
      std::vector<ref> outputs;
      for (auto o : p.outputs) outputs.push_back(value.at(o));
      program_outputs_[&e] = outputs;
      return outputs.at(0);
    }
  }
  // The object lowered first among those equal to e (what seen_ holds).
  template <expression E>
  const void* lowered_object(const E& e) const {
    auto [lo, hi] = seen_.equal_range(std::type_index(typeid(E)));
    for (auto it = lo; it != hi; ++it)
      if (same_value(*static_cast<const E*>(it->second.node), e)) return it->second.node;
    return &e;
  }

  ref push_node(graph_node n, std::vector<ref> inputs) {
    g_.nodes.push_back(std::move(n));
    node_inputs_.push_back(std::move(inputs));
    return {list::node, static_cast<std::uint32_t>(g_.nodes.size() - 1)};
  }

  graph g_;
  std::vector<std::vector<ref>> node_inputs_;
  std::vector<ref> outputs_;
  std::unordered_multimap<std::type_index, entry> seen_;
  std::map<const void*, std::vector<ref>> program_outputs_;
};
}  // namespace detail

// The graph value of one or more expressions; its outputs are the expressions, in order.
template <expression... E>
graph to_graph(const E&... exprs) {
  static_assert(sizeof...(E) > 0, "symflow: to_graph needs at least one expression");
  detail::graph_lowering lowering;
  (lowering.add_output(lowering.lower(exprs)), ...);
  return lowering.finish();
}

// to_graph of every expression in a tuple (what grad(loss, W, b) returns).
template <class... E>
graph to_graph(const std::tuple<E...>& exprs) {
  return std::apply([](const auto&... e) { return to_graph(e...); }, exprs);
}

// Copies the values of the graph's parameters found in a parameter store into the graph (for
// saving a model with its weights). Parameters missing from the store are left without a value.
inline void embed_parameters(graph& g, const params& store) {
  for (auto& p : g.parameters) {
    if (!store.contains(p.name)) continue;
    const params::entry& e = store.at(p.name);
    graph_tensor t;
    t.type = e.type;
    for (std::size_t x : e.extents) t.extents.push_back(static_cast<std::int64_t>(x));
    t.bytes.assign(e.bytes.data(), e.bytes.data() + e.bytes.size());
    detail::check_data_fits_type("embed_parameters", "parameter '" + p.name + "'", p.type, t);
    p.value = std::move(t);
  }
}

}  // namespace symflow
