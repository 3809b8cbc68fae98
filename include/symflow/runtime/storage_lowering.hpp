#pragma once
// Storage dtypes (core/dtype.hpp: f16, bf16, i8, u8, i16, u16, u32, u64) are held, not computed
// in: before a graph with such values runs, every node that computes on them is rewritten to
// compute in the compute dtypes, between explicit casts. A graph value keeps the types its author
// wrote (f16 + f16 is an f16 node, by the dtype rule of ir/dtype_rule.hpp); the interpreter runs
// the lowered form, in which only leaves, views and casts hold storage dtypes:
//
//   y = add(a: f16, b: f16): f16   ->   a' = cast(a, f32); b' = cast(b, f32);
//                                       y = add(a', b'): f32; y/cast_f16 = cast(y, f16)
//
// Each storage value is widened once however many nodes read it. Every node's result is rounded to
// the dtype the graph gives it, as PyTorch's half-precision ops round each result (a chain of f16
// ops rounds after each op); the casts are elementwise ops, fused into the nodes' passes. Views move elements of any dtype and
// stay as they are; a literal of a storage dtype becomes a wide literal (f64 or i64) cast once, so
// it is rounded once.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "../ir/control_flow/list.hpp"
#include "../ir/graph.hpp"
#include "op_table.hpp"

namespace symflow {

// Whether any value of g (leaf or node, sub-graphs included) has a storage dtype.
inline bool has_storage_dtypes(const graph& g) {
  for (std::uint32_t id = 0; id < g.value_count(); ++id)
    if (!is_compute_dtype(g.type_of(id).type)) return true;
  for (const auto& n : g.nodes)
    for (const auto& a : n.attributes)
      if (const auto* body = std::get_if<subgraph>(&a.value); body && body->body && has_storage_dtypes(*body->body))
        return true;
  return false;
}

namespace runtime_detail {
class storage_lowering {
 public:
  explicit storage_lowering(const graph& g) : in_(g), to_new_(g.value_count()) {
    out_.inputs = g.inputs;
    out_.parameters = g.parameters;
    out_.constants = g.constants;
    for (std::uint32_t id = 0; id < g.first_node_id(); ++id) to_new_[id] = id;
  }

  graph run() && {
    for (std::size_t k = 0; k < in_.nodes.size(); ++k) to_new_[in_.first_node_id() + k] = lower(in_.nodes[k]);
    for (std::uint32_t o : in_.outputs) out_.outputs.push_back(to_new_[o]);
    return std::move(out_);
  }

 private:
  std::uint32_t lower(const graph_node& n) {
    graph_node copy = n;
    for (auto& i : copy.inputs) i = to_new_[i];
    const dtype type = n.type.type;
    if (n.is_literal()) {
      if (is_compute_dtype(type)) return push(std::move(copy));
      copy.type.type = is_floating_dtype(type) ? dtype::f64 : dtype::i64;
      copy.name += "/wide";
      const std::uint32_t wide = push(std::move(copy));
      return push(cast_node(wide, type, n.name, n.where));
    }
    if (control_flow::is_control_flow(n.op)) {
      bool storage = !is_compute_dtype(type);
      for (auto i : copy.inputs) storage = storage || !is_compute_dtype(out_.type_of(i).type);
      for (const auto& a : n.attributes)
        if (const auto* body = std::get_if<subgraph>(&a.value)) storage = storage || (body->body && has_storage_dtypes(*body->body));
      if (storage)
        throw graph_error("node '" + n.name + "' (" + n.op + "): control flow over values of storage dtypes (f16, "
                          "bf16, the small and unsigned integers) is not supported; cast them to f32, i32 or i64 "
                          "around it");
      return push(std::move(copy));
    }
    const runtime_op* op = find_runtime_op(n.op);
    if (!op) throw graph_error("node '" + n.name + "': no runtime form for op '" + n.op + "'");
    if (op->kind == node_kind::view || op->dtypes.takes_storage_dtypes()) return push(std::move(copy));
    for (auto& i : copy.inputs) i = widened(i, n.where);
    if (is_compute_dtype(type)) return push(std::move(copy));
    copy.type.type = compute_dtype(type);
    for (auto& a : copy.attributes)
      if (a.key == "to") a.value = std::string(dtype_name(copy.type.type));
    const std::uint32_t computed = push(std::move(copy));
    return push(cast_node(computed, type, n.name + "/cast_" + std::string(dtype_name(type)), n.where));
  }

  // The value `id` of the lowered graph in its compute dtype: itself, or one cast shared by its readers.
  std::uint32_t widened(std::uint32_t id, const graph_location& where) {
    const graph_type& t = out_.type_of(id);
    if (is_compute_dtype(t.type)) return id;
    if (auto it = widened_.find(id); it != widened_.end()) return it->second;
    const std::uint32_t w =
        push(cast_node(id, compute_dtype(t.type), value_name(id) + "/cast_" + std::string(dtype_name(compute_dtype(t.type))), where));
    widened_.emplace(id, w);
    return w;
  }

  graph_node cast_node(std::uint32_t from, dtype to, std::string name, const graph_location& where) const {
    graph_node c;
    c.op = "cast";
    c.name = std::move(name);
    c.attributes.push_back({"to", std::string(dtype_name(to))});
    c.inputs = {from};
    c.type = {to, out_.type_of(from).shape};
    c.where = where;
    return c;
  }

  std::string value_name(std::uint32_t id) const {
    std::size_t i = id;
    if (i < out_.inputs.size()) return out_.inputs[i].name;
    i -= out_.inputs.size();
    if (i < out_.parameters.size()) return out_.parameters[i].name;
    i -= out_.parameters.size();
    if (i < out_.constants.size()) return out_.constants[i].name;
    return out_.nodes[i - out_.constants.size()].name;
  }

  std::uint32_t push(graph_node n) {
    out_.nodes.push_back(std::move(n));
    return static_cast<std::uint32_t>(out_.value_count() - 1);
  }

  const graph& in_;
  graph out_;
  std::vector<std::uint32_t> to_new_;  // old value id -> new value id
  std::unordered_map<std::uint32_t, std::uint32_t> widened_;
};
}  // namespace runtime_detail

// g with every node that computes on values of storage dtypes rewritten to compute in their compute
// dtypes between casts (see above); g itself when it has no storage dtypes. Leaves and outputs keep
// their types. Throws graph_error naming a control-flow node that carries storage dtypes.
inline graph lower_storage_dtypes(graph g) {
  if (!has_storage_dtypes(g)) return g;
  return runtime_detail::storage_lowering(g).run();
}

}  // namespace symflow
