#pragma once
// to_graph(exprs...): lowers expression types (gradients are ordinary expressions) to a graph value.
// Identical subexpressions become one value; the first occurrence met in a depth-first,
// operands-in-order walk gives it its name and location. Identity is decided on the graph being
// built, not on the types: copies of a node (one operand block) are lowered once, leaves are one
// per name, and a node whose op, attributes, operands and type equal an earlier node's is that
// node (hash-consing). The lowering then instantiates one function per node type and no
// comparison of types, whose names spell the model below each node.
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>

#include "../core/params.hpp"
#include "../expr/leaves.hpp"
#include "../expr/node.hpp"
#include "../expr/structural.hpp"
#include "graph.hpp"
#include "structure_hasher.hpp"

namespace symflow {

namespace detail {
// False for a node whose op declares graph_form = false (the typed scan's ops, nn/scan.hpp): grad
// and eval keep it off the runtime-program route. to_graph refuses such a node unless its op gives
// its graph form itself (graph_attributes: the typed scan as the graph's scan).
template <class E>
constexpr bool has_graph_form() {
  if constexpr (requires { E::op_type::graph_form; }) return E::op_type::graph_form;
  else return true;
}

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

// Which branch of graph_lowering::lower_new lowers a node type (ir/lowering_key.hpp records what
// each branch reads, so the two decide alike).
enum class lowering_form {
  leaf,            // a placeholder or variable: one graph leaf per name and type
  constant,        // one graph constant per tensor object
  literal,         // a literal node
  as_operand,      // a materialising or reference node: its operand's value
  program,         // a program_run / program_output kernel: the program's graph inlined
  own_attributes,  // an op that makes its graph form's attributes itself (the typed scan)
  no_graph_form,   // refused
  accumulation,    // a chain of adds over the terms
  op,              // a graph node of the op, with its attributes
};
template <class E>
constexpr lowering_form lowering_form_of() {
  if constexpr (E::kind == node_kind::placeholder || E::kind == node_kind::variable) return lowering_form::leaf;
  else if constexpr (E::kind == node_kind::constant) return lowering_form::constant;
  else if constexpr (E::kind == node_kind::literal) return lowering_form::literal;
  else if constexpr ((E::kind == node_kind::elementwise && requires { E::op_type::materialises; }) ||
                     E::kind == node_kind::reference)
    return lowering_form::as_operand;
  else if constexpr (E::kind == node_kind::kernel && requires(const E& e) { e.op.program->source(); })
    return lowering_form::program;
  else if constexpr (E::kind == node_kind::kernel && requires(const E& e) { e.op.graph_attributes(); })
    return lowering_form::own_attributes;
  else if constexpr (!has_graph_form<E>()) return lowering_form::no_graph_form;
  else if constexpr (E::kind == node_kind::accumulation) return lowering_form::accumulation;
  else return lowering_form::op;
}
// The attributes an op node's object reports (visit_attributes); a reduction's come from its type.
template <class E>
void collect_op_attributes(const E& e, std::vector<graph_attribute>& out) {
  if constexpr (E::kind != node_kind::reduction && requires { e.op.visit_attributes(attribute_collector{&out}); })
    e.op.visit_attributes(attribute_collector{&out});
}

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
    bool operator==(const ref&) const = default;
  };

  template <expression E>
  ref lower(const E& e) {
    const void* id = node_identity(e);
    if (id)
      if (auto it = by_identity_.find(id); it != by_identity_.end()) return it->second;
    const ref r = lower_new(e);
    if (id) by_identity_.emplace(id, r);
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
  template <expression E>
  ref lower_new(const E& e) {
    // Local copies of the node's static names: an odr-use of E::op_name (or E::mask) would emit
    // one object per node type, named after the whole model below it.
    constexpr std::string_view op_name = E::op_name;
    constexpr lowering_form form = lowering_form_of<E>();
    if constexpr (form == lowering_form::leaf) {
      // One leaf per name and type (a name given to leaves of two types is refused by finish()).
      constexpr bool input = E::kind == node_kind::placeholder;
      auto& leaves = input ? g_.inputs : g_.parameters;
      const list where = input ? list::input : list::parameter;
      const std::string_view name = E::name.view();
      graph_type type = graph_type_of<E>();
      for (std::size_t i = 0; i < leaves.size(); ++i)
        if (leaves[i].name == name && leaves[i].type == type) return {where, static_cast<std::uint32_t>(i)};
      leaves.push_back(graph_leaf{std::string(name), graph_scope_of(e.info), std::move(type), graph_location_of(e.info),
                                  std::nullopt});
      return {where, static_cast<std::uint32_t>(leaves.size() - 1)};
    } else if constexpr (form == lowering_form::constant) {
      // One constant per tensor object (constants share their storage when copied).
      const void* data = e.value.get();
      if (auto it = constants_by_data_.find(data); it != constants_by_data_.end()) return it->second;
      g_.constants.push_back({e.info.scoped_name(op_name), graph_type_of<E>(), graph_location_of(e.info),
                              to_graph_tensor(*e.value)});
      const ref r{list::constant, static_cast<std::uint32_t>(g_.constants.size() - 1)};
      constants_by_data_.emplace(data, r);
      return r;
    } else if constexpr (form == lowering_form::literal) {
      graph_node n{std::string(op_name), e.info.scoped_name(op_name),
                   {{"value", literal_attribute(e.value)}, {"static", bool(is_static_literal_v<E>)}},
                   {}, graph_type_of<E>(), graph_location_of(e.info)};
      return push_merged(std::move(n), {});
    } else if constexpr (form == lowering_form::as_operand) {
      return lower(std::get<0>(e.args()));  // in a graph every value is stored once anyway
    } else if constexpr (form == lowering_form::program) {
      return lower_program(e);
    } else if constexpr (form == lowering_form::own_attributes) {
      // An op whose graph form is another op's, with attributes it makes itself (the typed scan
      // as the graph's scan, its body lowered as a sub-graph).
      std::vector<ref> inputs;
      std::apply([&](const auto&... a) { (inputs.push_back(lower(a)), ...); }, e.args());
      graph_node n{std::string(op_name), e.info.scoped_name(op_name), e.op.graph_attributes(), {}, graph_type_of<E>(),
                   graph_location_of(e.info)};
      return push_node(std::move(n), std::move(inputs));
    } else if constexpr (form == lowering_form::no_graph_form) {
      // A run-time error, not a static_assert: evaluation instantiates to_graph for its reports.
      throw graph_error("to_graph: node " + describe(e) +
                        " has no graph form (the gradient of a typed scan, nn/scan_backward.hpp): "
                        "lower the model itself and differentiate the graph instead");
    } else if constexpr (form == lowering_form::accumulation) {
      // A chain of adds over the terms; no terms is the scalar 0, which broadcasts where it is added.
      if (e.items().empty()) return lower(zero<value_type_of<E>>{});
      ref sum = lower(e.items().front());
      for (std::size_t i = 1; i < e.items().size(); ++i) {
        graph_node n{"add", e.info.scoped_name("add"), {}, {}, graph_type_of<E>(), graph_location_of(e.info)};
        sum = push_merged(std::move(n), {sum, lower(e.items()[i])});
      }
      return sum;
    } else {
      std::vector<ref> inputs;
      std::apply([&](const auto&... a) { (inputs.push_back(lower(a)), ...); }, e.args());
      graph_node n{std::string(op_name), e.info.scoped_name(op_name), {}, {}, graph_type_of<E>(),
                   graph_location_of(e.info)};
      if constexpr (E::kind == node_kind::reduction) {
        std::vector<std::int64_t> axes;
        constexpr auto mask = E::mask;
        for (std::size_t i = 0; i < mask.size(); ++i)
          if (mask[i]) axes.push_back(static_cast<std::int64_t>(i));
        n.attributes.push_back({"axes", std::move(axes)});
        constexpr bool keep_dims = E::keep_dims;
        n.attributes.push_back({"keepdims", keep_dims});
      }
      collect_op_attributes(e, n.attributes);
      // An op with state it cannot compare (no ==) is never taken for another (as same_value).
      if constexpr (requires { e.op; } && !std::is_empty_v<typename E::op_type> && !requires { e.op == e.op; })
        return push_node(std::move(n), std::move(inputs));
      else
        return push_merged(std::move(n), std::move(inputs));
    }
  }

  // A node computed by a runtime program (runtime/program_gradient.hpp): program_run inlines the
  // program's graph, its leaves taking the values of the node's operands; program_output is then one
  // of that graph's outputs.
  template <expression E>
  ref lower_program(const E& e) {
    if constexpr (requires { e.op.index; }) {
      const auto& run = std::get<0>(e.args());
      lower(run);
      return program_outputs_.at(node_identity(run)).at(e.op.index);
    } else {
      std::vector<ref> operands;
      std::apply([&](const auto&... a) { (operands.push_back(lower(a)), ...); }, e.args());
      // Another run of the same program on the same operands (a gradient rule applied twice) is
      // that run.
      for (const auto& [program, earlier] : program_runs_)
        if (program == e.op.program.get() && earlier.operands == operands) {
          program_outputs_[node_identity(e)] = earlier.outputs;
          return earlier.outputs.at(0);
        }
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
      program_outputs_[node_identity(e)] = outputs;
      program_runs_.push_back({e.op.program.get(), {std::move(operands), outputs}});
      return outputs.at(0);
    }
  }

  ref push_node(graph_node n, std::vector<ref> inputs) {
    g_.nodes.push_back(std::move(n));
    node_inputs_.push_back(std::move(inputs));
    return {list::node, static_cast<std::uint32_t>(g_.nodes.size() - 1)};
  }

  // push_node, unless an earlier node has the same op, attributes, operands and type: then that one.
  ref push_merged(graph_node n, std::vector<ref> inputs) {
    structure_hasher hash;
    hash.add(n.op);
    for (const ref& r : inputs) hash.add(std::uint64_t(r.where) << 32 | r.index);
    hash.add(n.type);
    for (const auto& a : n.attributes) {
      hash.add(a.key);
      hash.add(a.value);
    }
    const std::uint64_t h = hash.value();
    auto [lo, hi] = merged_.equal_range(h);
    for (auto it = lo; it != hi; ++it) {
      const graph_node& m = g_.nodes[it->second];
      const auto& m_inputs = node_inputs_[it->second];
      if (m.op == n.op && m.type == n.type && m.attributes == n.attributes && m_inputs == inputs)
        return {list::node, it->second};
    }
    const ref r = push_node(std::move(n), std::move(inputs));
    merged_.emplace(h, r.index);
    return r;
  }

  struct program_run_entry {
    std::vector<ref> operands, outputs;
  };

  graph g_;
  std::vector<std::vector<ref>> node_inputs_;
  std::vector<ref> outputs_;
  std::unordered_map<const void*, ref> by_identity_;          // op nodes by operand block
  std::unordered_map<const void*, ref> constants_by_data_;    // constants by storage
  std::unordered_multimap<std::uint64_t, std::uint32_t> merged_;  // hash-consed nodes by their hash
  std::map<const void*, std::vector<ref>> program_outputs_;   // program_run nodes by identity
  std::vector<std::pair<const void*, program_run_entry>> program_runs_;
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
