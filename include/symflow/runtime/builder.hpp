#pragma once
// Building graph values at run time: the same ops, applied to handles. A program can build a graph
// whose structure depends on data (a recurrent cell unrolled over each sequence's own length, a
// tree-shaped model following a parse tree), then run it with the interpreter or differentiate it.
// Every node's dtype and extents come from the op's own rules (runtime forms); an extent may be
// unknown (-1), as in a graph lowered from a type with `dyn` extents.
#include <cstdint>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "../ir/control_flow/list.hpp"
#include "../ir/graph.hpp"
#include "../ir/validate.hpp"
#include "op_table.hpp"

namespace symflow {

class graph_builder;

// A value of the graph being built.
struct graph_handle {
  graph_builder* builder = nullptr;
  std::uint32_t id = 0;  // the builder's own numbering (leaves and nodes in creation order)

  const graph_type& type() const;
  dtype value_type() const { return type().type; }
  const std::vector<std::int64_t>& shape() const { return type().shape; }
  std::size_t rank() const { return shape().size(); }
};

class graph_builder {
 public:
  graph_builder() = default;
  graph_builder(const graph_builder&) = delete;
  graph_builder& operator=(const graph_builder&) = delete;

  // Starts from an existing graph: its leaves, constants and nodes become handles, in id order.
  explicit graph_builder(const graph& g) {
    for (const auto& l : g.inputs) add_entry(entry_kind::input, inputs_.size()), inputs_.push_back(l);
    for (const auto& l : g.parameters) add_entry(entry_kind::parameter, parameters_.size()), parameters_.push_back(l);
    for (const auto& c : g.constants) add_entry(entry_kind::constant, constants_.size()), constants_.push_back(c);
    for (const auto& n : g.nodes) {
      add_entry(entry_kind::node, nodes_.size());
      nodes_.push_back(n);
      refine_type(nodes_.back());
    }
    for (auto o : g.outputs) outputs_.push_back(handle(o));
  }

  graph_handle input(std::string name, dtype type, std::vector<std::int64_t> shape) {
    add_entry(entry_kind::input, inputs_.size());
    inputs_.push_back(graph_leaf{std::move(name), scope_, graph_type{type, std::move(shape)}, {}, std::nullopt});
    return last();
  }
  graph_handle parameter(std::string name, dtype type, std::vector<std::int64_t> shape,
                         std::optional<graph_tensor> value = std::nullopt) {
    add_entry(entry_kind::parameter, parameters_.size());
    parameters_.push_back(graph_leaf{std::move(name), scope_, graph_type{type, std::move(shape)}, {}, std::move(value)});
    return last();
  }
  graph_handle constant(graph_tensor data) {
    add_entry(entry_kind::constant, constants_.size());
    graph_type t{data.type, data.extents};
    constants_.push_back(graph_constant{scoped("constant"), std::move(t), {}, std::move(data)});
    return last();
  }
  // A scalar; `is_static` marks a compile-time literal the simplifier may rely on (zero, one). An
  // integer literal must be a number an int64 holds: value_error for NaN, an infinity or a value
  // past 2^63, whose conversion would be undefined.
  graph_handle literal(double value, dtype type, bool is_static = false) {
    attribute_value v;
    if (type == dtype::boolean) v = value != 0;
    else if (is_floating_dtype(type)) v = value;
    else if (!(value >= -0x1p63 && value < 0x1p63))
      throw value_error("graph_builder: the literal " + std::to_string(value) + " is not a value of " +
                        std::string(dtype_name(type)) + " (an integer literal must lie in the int64 range)");
    else v = std::int64_t(value);
    return add_node(graph_node{std::string(literal_node_op), scoped(std::string(literal_node_op)), {{"value", v}, {"static", is_static}}, {}, graph_type{type, {}}, {}});
  }
  graph_handle literal_like(double value, const graph_handle& like) { return literal(value, like.value_type()); }

  // out = op[attributes](inputs...), typed by the op's rules; throws shape_error / value_error
  // naming the op, its scoped name and the operands' types when they do not fit.
  graph_handle apply(std::string_view op_name, const std::vector<graph_handle>& inputs,
                     std::vector<graph_attribute> attributes = {}, std::string name = {}) {
    const runtime_op* op = find_runtime_op(op_name);
    const bool control = !op && control_flow::is_control_flow(op_name);
    if (!op && !control) throw graph_error("graph_builder: unknown op '" + std::string(op_name) + "'");
    graph_node n{std::string(op_name), scoped(name.empty() ? std::string(op_name) : name), std::move(attributes), {}, {}, {}};
    for (const auto& h : inputs) {
      if (h.builder != this) throw graph_error("graph_builder: node '" + n.name + "' reads a value of another builder");
      n.inputs.push_back(h.id);
    }
    n.type = control ? infer_control_flow(n, inputs) : infer(*op, n, inputs);
    return add_node(std::move(n));
  }

  const graph_type& type_of(std::uint32_t id) const {
    const entry& e = entries_.at(id);
    switch (e.kind) {
      case entry_kind::input: return inputs_[e.index].type;
      case entry_kind::parameter: return parameters_[e.index].type;
      case entry_kind::constant: return constants_[e.index].type;
      default: return nodes_[e.index].type;
    }
  }
  graph_handle handle(std::uint32_t id) { return graph_handle{this, id}; }
  std::size_t size() const { return entries_.size(); }
  bool is_node(std::uint32_t id) const { return entries_.at(id).kind == entry_kind::node; }
  const graph_node& node(std::uint32_t id) const { return nodes_.at(entries_.at(id).index); }
  const graph_leaf* leaf(std::uint32_t id) const {
    const entry& e = entries_.at(id);
    if (e.kind == entry_kind::input) return &inputs_[e.index];
    if (e.kind == entry_kind::parameter) return &parameters_[e.index];
    return nullptr;
  }
  const std::vector<graph_handle>& outputs() const { return outputs_; }

  // Names of nodes created inside a scope start with "scope/".
  class scope_guard {
   public:
    scope_guard(graph_builder& b, const std::string& name) : b_(b), saved_(b.scope_) {
      b_.scope_ = saved_.empty() ? name : saved_ + "/" + name;
    }
    ~scope_guard() { b_.scope_ = saved_; }
    scope_guard(const scope_guard&) = delete;
    scope_guard& operator=(const scope_guard&) = delete;

   private:
    graph_builder& b_;
    std::string saved_;
  };
  scope_guard scope(const std::string& name) { return scope_guard(*this, name); }

  // The graph value: inputs, parameters, constants, then nodes (in creation order, which is
  // topological), with these outputs.
  graph build(const std::vector<graph_handle>& outputs) const {
    graph g;
    g.inputs = inputs_;
    g.parameters = parameters_;
    g.constants = constants_;
    std::vector<std::uint32_t> final_id(entries_.size());
    const std::uint32_t first_param = std::uint32_t(inputs_.size()),
                        first_const = first_param + std::uint32_t(parameters_.size()),
                        first_node = first_const + std::uint32_t(constants_.size());
    for (std::uint32_t i = 0; i < entries_.size(); ++i) {
      const entry& e = entries_[i];
      switch (e.kind) {
        case entry_kind::input: final_id[i] = std::uint32_t(e.index); break;
        case entry_kind::parameter: final_id[i] = first_param + std::uint32_t(e.index); break;
        case entry_kind::constant: final_id[i] = first_const + std::uint32_t(e.index); break;
        default: final_id[i] = first_node + std::uint32_t(e.index);
      }
    }
    for (const auto& n : nodes_) {
      graph_node copy = n;
      for (auto& i : copy.inputs) i = final_id[i];
      g.nodes.push_back(std::move(copy));
    }
    for (const auto& h : outputs) g.outputs.push_back(final_id.at(h.id));
    return g;
  }
  graph build() const { return build(outputs_); }

 private:
  enum class entry_kind : std::uint8_t { input, parameter, constant, node };
  struct entry {
    entry_kind kind;
    std::size_t index;
  };

  void add_entry(entry_kind k, std::size_t index) { entries_.push_back(entry{k, index}); }
  graph_handle last() { return graph_handle{this, std::uint32_t(entries_.size() - 1)}; }
  graph_handle add_node(graph_node n) {
    add_entry(entry_kind::node, nodes_.size());
    nodes_.push_back(std::move(n));
    return last();
  }
  std::string scoped(const std::string& name) const { return scope_.empty() ? name : scope_ + "/" + name; }

  // The least common multiple of the known extents of a node's operands and of the positive
  // integers in its attributes; 1 where it would exceed 2^20 (the probes must not overflow a count).
  static std::size_t probe_scale(const graph_node& n, const std::vector<graph_handle>& inputs) {
    std::size_t scale = 1;
    auto take = [&](std::int64_t v) {
      if (v <= 1 || scale == 0) return;
      scale = std::lcm(scale, std::size_t(v));
      if (scale > (std::size_t(1) << 20)) scale = 0;
    };
    for (const auto& h : inputs)
      for (auto e : h.shape()) take(e);
    for (const auto& a : n.attributes) {
      if (const auto* v = std::get_if<std::int64_t>(&a.value)) take(*v);
      if (const auto* l = std::get_if<std::vector<std::int64_t>>(&a.value))
        for (auto v : *l) take(v);
    }
    return scale == 0 ? 1 : scale;
  }

  // A control-flow node's type, by its op's rule over its operands' and sub-graphs' types (the
  // checks validate() makes): graph_error naming the node where they do not fit.
  graph_type infer_control_flow(const graph_node& n, const std::vector<graph_handle>& inputs) const {
    std::vector<graph_type> types;
    for (const auto& h : inputs) types.push_back(h.type());
    const std::string who = n.op + " '" + n.name + "'";
    for (const auto& a : n.attributes)
      if (const subgraph* body = std::get_if<subgraph>(&a.value)) {
        if (!body->body) throw graph_error(who + ": attribute '" + a.key + "' holds no graph");
        validate(*body->body, who + ": " + a.key);
      }
    graph_type t;
    control_flow::visit(n.op, [&](auto op) {
      for (const auto& spec : op.attributes)
        if (!n.attribute(spec.key) || (spec.kind == control_flow::flow_attribute::graph
                                           ? !std::holds_alternative<subgraph>(*n.attribute(spec.key))
                                           : !std::holds_alternative<std::int64_t>(*n.attribute(spec.key))))
          throw graph_error(who + ": attribute '" + std::string(spec.key) + "' is missing or not " +
                            (spec.kind == control_flow::flow_attribute::graph ? "a graph" : "an integer"));
      if (types.size() < op.min_inputs || types.size() > op.max_inputs)
        throw graph_error(who + ": " + std::to_string(types.size()) + " operands; it takes at least " +
                          std::to_string(op.min_inputs));
      t = op.result_type(n, types, who);
    });
    return t;
  }

  // Unknown extents (-1): elementwise broadcasting keeps them unknown unless a known extent other than
  // 1 decides; other ops' rules run twice with the unknowns replaced by two different probe extents,
  // and a result extent that differs between the runs is unknown.
  graph_type infer(const runtime_op& op, const graph_node& n, const std::vector<graph_handle>& inputs) const {
    const node_attributes attrs(n);
    const std::string who = n.op + " '" + n.name + "'";
    std::vector<dtype> types;
    bool unknown = false;
    for (const auto& h : inputs) {
      types.push_back(h.value_type());
      for (auto e : h.shape()) unknown = unknown || e < 0;
    }
    auto extents_with = [&](std::size_t probe) {
      std::vector<runtime_extents> out;
      for (const auto& h : inputs) {
        runtime_extents e;
        for (auto x : h.shape()) e.push_back(x < 0 ? probe : std::size_t(x));
        out.push_back(std::move(e));
      }
      return out;
    };
    auto describe_operands = [&] {
      std::string s;
      for (const auto& h : inputs) s += (s.empty() ? "" : ", ") + graph_type_string(h.type());
      return "(" + s + ")";
    };
    try {
      if (op.kind == node_kind::elementwise && unknown) {
        auto t = infer_node_type(op, attrs, types, extents_with(1), who);  // the dtype rule
        std::size_t rank = 0;
        for (const auto& h : inputs) rank = std::max(rank, h.rank());
        std::vector<std::int64_t> shape(rank, 1);
        for (std::size_t i = 0; i < rank; ++i) {
          std::int64_t known = 1;
          bool any_unknown = false;
          for (const auto& h : inputs) {
            if (i + h.rank() < rank) continue;
            const std::int64_t e = h.shape()[i + h.rank() - rank];
            if (e < 0) any_unknown = true;
            else if (e != 1) {
              if (known != 1 && known != e) throw shape_error(who + ": cannot broadcast " + describe_operands());
              known = e;
            }
          }
          shape[i] = known != 1 ? known : any_unknown ? -1 : 1;
        }
        return graph_type{t.type, shape};
      }
      auto probe = [&](std::size_t scale) {
        auto first = infer_node_type(op, attrs, types, extents_with(1009 * scale), who);
        std::vector<std::int64_t> shape(first.extents.begin(), first.extents.end());
        if (unknown) {
          auto second = infer_node_type(op, attrs, types, extents_with(1013 * scale), who);
          for (std::size_t i = 0; i < shape.size(); ++i)
            if (first.extents[i] != second.extents[i]) shape[i] = -1;
        }
        return graph_type{first.type, shape};
      };
      if (!unknown) return probe(1);
      try {
        return probe(1);
      } catch (const shape_error&) {
        // A rule may need the unknown extent to be a multiple of the known ones (reshape [?, 3] to
        // [-1, 37]): probe again with multiples of every extent the node names, before refusing.
        const std::size_t scale = probe_scale(n, inputs);
        if (scale <= 1) throw;
        return probe(scale);
      }
    } catch (const shape_error& e) {
      throw shape_error(std::string(e.what()) + " (operands " + describe_operands() + ")");
    }
  }

  // A graph lowered from a type may leave an extent unknown that its operands decide (a slice of a
  // static shape): the ops' runtime rules fill it in, so later rules see it.
  void refine_type(graph_node& n) const {
    const runtime_op* op = n.is_literal() ? nullptr : find_runtime_op(n.op);
    if (!op) return;
    std::vector<graph_handle> inputs;
    for (auto i : n.inputs) inputs.push_back(graph_handle{const_cast<graph_builder*>(this), i});
    try {
      const graph_type t = infer(*op, n, inputs);
      if (t.type != n.type.type || t.shape.size() != n.type.shape.size()) return;
      for (std::size_t i = 0; i < t.shape.size(); ++i)
        if (n.type.shape[i] < 0 && t.shape[i] >= 0) n.type.shape[i] = t.shape[i];
    } catch (const error&) {
      // the declared type stands; the interpreter checks it at run time
    }
  }

  std::vector<entry> entries_;
  std::vector<graph_leaf> inputs_, parameters_;
  std::vector<graph_constant> constants_;
  std::vector<graph_node> nodes_;
  std::vector<graph_handle> outputs_;
  std::string scope_;
};

inline const graph_type& graph_handle::type() const { return builder->type_of(id); }

// sum, mean, max and min on handles: sum(h), sum(h, axes<1>), sum(h, axes<-1>, keepdims), as on
// expression types (reduction_function forwards here); no axes means all of them.
template <class Op>
graph_handle reduce_value(Op, const graph_handle& x, std::vector<int> axes, bool keepdims) {
  std::vector<std::int64_t> list;
  if (axes.empty())
    for (std::size_t i = 0; i < x.rank(); ++i) list.push_back(std::int64_t(i));
  for (int a : axes) list.push_back(a < 0 ? std::int64_t(x.rank()) + a : a);
  return x.builder->apply(Op::name, {x}, {{"axes", std::move(list)}, {"keepdims", keepdims}});
}

// Every op without value attributes applies to handles through its own function, spelled as on
// expression types (exp(h), h + 1.0, where(m, a, b), cast<double>(h), matmul(a, b)): the function
// calls apply_value with the op's type, which supplies the name and any attributes it carries as
// template arguments. Plain numbers take the dtype of the last handle among the operands.
template <class Op, class... X>
  requires(sizeof...(X) > 0 && ((std::is_same_v<X, graph_handle> || std::is_arithmetic_v<X>) && ...) &&
           (std::is_same_v<X, graph_handle> || ...))
graph_handle apply_value(Op op, const X&... x) {
  const graph_handle* like = nullptr;
  ((like = [&]() -> const graph_handle* {
      if constexpr (std::is_same_v<X, graph_handle>) return &x;
      else return like;
    }()),
   ...);
  auto as_handle = [&](const auto& v) -> graph_handle {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(v)>, graph_handle>) return v;
    else return like->builder->literal_like(double(v), *like);
  };
  std::vector<graph_attribute> attributes;
  if constexpr (requires { op.visit_attributes(attribute_collector{&attributes}); })
    op.visit_attributes(attribute_collector{&attributes});
  return like->builder->apply(Op::name, {as_handle(x)...}, attributes);
}

}  // namespace symflow

// The ops whose attributes are values on handles (transpose(h, perm), cumsum(h, axis), ...).
#include "handle_ops.hpp"
