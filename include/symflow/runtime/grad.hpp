#pragma once
// Differentiating a graph value at run time with the ops' own derivative rules — no second table
// (derivative_rules.hpp). A rule fragment is spliced in with its placeholders bound to the node's
// adjoint, value and operands; a view's or kernel's rule is called on graph handles. Adjoints are
// summed back over broadcast axes as at compile time (an unknown extent is taken as not broadcast).
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../core/separate_compilation.hpp"
#include "../ir/validate.hpp"
#include "builder.hpp"
#include "control_flow_gradient.hpp"
#include "derivative_rules.hpp"
#include "storage_lowering.hpp"
#include "plan_cache.hpp"


namespace symflow {

namespace runtime_detail {

// Fragments depend only on the op, its attributes and the operand dtypes: built once each.
inline const std::optional<rule_fragment>& cached_fragment(const derivative_rule& rule, const graph_node& n,
                                                           const std::vector<dtype>& in) {
  // Graphs may be differentiated on several threads at once: the cache is shared, so it is locked.
  // Entries are never erased, so a reference into the map stays valid after the lock is released.
  static std::mutex mutex;
  static std::map<std::string, std::optional<rule_fragment>> cache;
  std::string key = n.op;
  for (auto d : in) key += "," + std::string(dtype_name(d));
  for (const auto& a : n.attributes)
    if (a.key == "to") key += ",to=" + std::get<std::string>(a.value);
  std::lock_guard lock(mutex);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, rule.fragment(node_attributes(n), in)).first;
  return it->second;
}

// Adds a fragment's nodes to the builder with its placeholders bound by `bind(name)`. In a reduction's
// fragment every `axes` attribute belongs to a reduction over the stand-in's one axis (the rule's
// `over`): it becomes the node's `reduced_axes`.
template <class Bind>
std::vector<std::optional<graph_handle>> splice(graph_builder& b, const rule_fragment& f, Bind&& bind,
                                                const std::vector<std::int64_t>* reduced_axes = nullptr) {
  const graph& body = f.body;
  std::vector<graph_handle> value;
  for (const auto& in : body.inputs) value.push_back(bind(in.name));
  for (const auto& c : body.constants) value.push_back(b.constant(c.data));
  for (const auto& n : body.nodes) {
    if (n.is_literal()) {
      const attribute_value* v = n.attribute("value");
      const attribute_value* s = n.attribute("static");
      double x = 0;
      if (std::holds_alternative<double>(*v)) x = std::get<double>(*v);
      else if (std::holds_alternative<std::int64_t>(*v)) x = double(std::get<std::int64_t>(*v));
      else if (std::holds_alternative<bool>(*v)) x = std::get<bool>(*v);
      value.push_back(b.literal(x, n.type.type, s && std::get<bool>(*s)));
      continue;
    }
    std::vector<graph_handle> ins;
    for (auto i : n.inputs) ins.push_back(value.at(i));
    std::vector<graph_attribute> attributes = n.attributes;
    if (reduced_axes)
      for (auto& a : attributes)
        if (a.key == "axes") a.value = *reduced_axes;
    value.push_back(b.apply(n.op, ins, attributes));
  }
  std::vector<std::optional<graph_handle>> out;
  for (int k : f.operand_output)
    out.push_back(k < 0 ? std::nullopt : std::optional<graph_handle>(value.at(body.outputs.at(std::size_t(k)))));
  return out;
}

// The adjoint summed over the axes along which `target` was broadcast, then stretched to its shape.
inline graph_handle fit_adjoint(graph_builder& b, graph_handle c, const graph_handle& target) {
  // A copy: a handle's shape lives in the builder's node storage, which the applies below may move.
  const std::vector<std::int64_t> t = target.shape();
  if (c.rank() > t.size()) {
    std::vector<std::int64_t> lead(c.rank() - t.size());
    for (std::size_t i = 0; i < lead.size(); ++i) lead[i] = std::int64_t(i);
    c = b.apply(ops::sum_op::name, {c}, {{"axes", lead}, {"keepdims", false}});
  }
  std::vector<std::int64_t> ones;
  for (std::size_t i = 0; i < c.rank(); ++i)
    if (t[t.size() - c.rank() + i] == 1 && c.shape()[i] != 1) ones.push_back(std::int64_t(i));
  if (!ones.empty()) c = b.apply(ops::sum_op::name, {c}, {{"axes", ones}, {"keepdims", true}});
  if (c.shape() != t) c = b.apply(ops::expand_as_op::name, {c, target});
  return c;
}

// differentiate() without the cache; g is valid. Nodes on storage dtypes are differentiated in
// their lowered form (storage_lowering.hpp): their compute is f32 between casts.
inline graph differentiate_uncached(const graph& source, const std::vector<std::string>& wrt) {
  if (source.outputs.empty()) throw graph_error("differentiate: the graph has no outputs");
  const graph g = lower_storage_dtypes(source);
  graph_builder b(g);
  const std::uint32_t loss = g.outputs[0];
  const graph_type loss_type = b.type_of(loss);
  if (!loss_type.shape.empty() || (loss_type.type != dtype::f32 && loss_type.type != dtype::f64))
    throw graph_error("differentiate: the first output must be a floating scalar, not " + graph_type_string(loss_type));

  std::vector<std::uint32_t> targets;
  for (const auto& name : wrt) {
    std::optional<std::uint32_t> found;
    for (std::uint32_t id = 0; id < b.size() && !b.is_node(id); ++id)
      if (const graph_leaf* l = b.leaf(id); l && l->name == name) found = id;
    if (!found) throw graph_error("differentiate: no input or parameter named '" + name + "'");
    const dtype t = b.type_of(*found).type;
    if (compute_dtype(t) != dtype::f32 && compute_dtype(t) != dtype::f64)
      throw graph_error("differentiate: '" + name + "' is " + std::string(dtype_name(t)) + ", not a floating dtype");
    targets.push_back(*found);
  }

  // Only values on a path from a target to the loss get adjoints.
  const std::size_t original = b.size();
  std::vector<bool> needed(original, false);
  for (auto t : targets) needed[t] = true;
  for (std::uint32_t id = 0; id < original; ++id)
    if (b.is_node(id))
      for (auto i : b.node(id).inputs) needed[id] = needed[id] || needed[i];

  auto scope = b.scope("grad");
  std::vector<std::optional<graph_handle>> adjoint(original);
  adjoint[loss] = b.literal(1.0, loss_type.type, true);
  for (std::uint32_t id = loss + 1; id-- > 0;) {
    if (!adjoint[id] || !needed[id] || !b.is_node(id)) continue;
    const graph_node n = b.node(id);  // a copy: adding nodes may move the builder's storage
    if (n.is_literal()) continue;
    if (control_flow::is_control_flow(n.op)) {
      const auto contributions = control_flow_adjoints(b, n, *adjoint[id], b.handle(id));
      for (std::size_t k = 0; k < n.inputs.size(); ++k) {
        const std::uint32_t in = n.inputs[k];
        if (!contributions[k] || !needed[in]) continue;
        adjoint[in] = adjoint[in] ? b.apply(ops::add_op::name, {*adjoint[in], *contributions[k]}) : *contributions[k];
      }
      continue;
    }
    const derivative_rule* rule = find_derivative_rule(n.op);
    if (!rule) throw graph_error("differentiate: no derivative rule for op '" + n.op + "' (node '" + n.name + "')");
    std::vector<graph_handle> x;
    std::vector<dtype> types;
    for (auto i : n.inputs) {
      x.push_back(b.handle(i));
      types.push_back(b.type_of(i).type);
    }
    const graph_handle y = b.handle(id), gy = *adjoint[id];
    const node_attributes attrs(n);
    std::vector<std::optional<graph_handle>> contributions;
    if (find_runtime_op(n.op)->dtypes.takes_storage_dtypes() &&
        (!is_compute_dtype(types[0]) || !is_compute_dtype(n.type.type))) {
      // A conversion to or from a storage dtype (after lowering, only cast): between floating dtypes
      // the adjoint converted back to the operand's dtype, as cast's own rule does; none through integers.
      if (compute_dtype(types[0]) != dtype::f32 && compute_dtype(types[0]) != dtype::f64) continue;
      if (compute_dtype(n.type.type) != dtype::f32 && compute_dtype(n.type.type) != dtype::f64) continue;
      contributions = {b.apply(n.op, {gy}, {{"to", std::string(dtype_name(types[0]))}})};
    } else if (rule->runtime) {
      contributions = rule->runtime(n, gy, y, x);
    } else {
      const auto& fragment = cached_fragment(*rule, n, types);
      if (!fragment) continue;  // no floating result: nothing flows back
      graph_handle g_in = gy, y_in = y;
      std::optional<graph_handle> count;
      const bool reduction = rule->kind == node_kind::reduction;
      const std::vector<std::int64_t> reduced_axes = reduction ? attrs.integers("axes") : std::vector<std::int64_t>{};
      if (reduction && !attrs.boolean("keepdims")) {
        const std::vector<graph_attribute> axes{{"axes", reduced_axes}};
        g_in = b.apply(ops::expand_dims_op<1u>::name, {gy}, axes);
        y_in = b.apply(ops::expand_dims_op<1u>::name, {y}, axes);
      }
      contributions = splice(b, *fragment, [&](const std::string& name) -> graph_handle {
        if (name == "g") return g_in;
        if (name == "y") return y_in;
        if (name == "count") {
          if (!count)
            count = b.apply(ops::reduced_count_op<1u, float>::name, {x[0]},
                            {{"axes", reduced_axes}, {"to", std::string(dtype_name(types[0]))}});
          return *count;
        }
        if (name.size() == 2 && name[0] == 'x') return x.at(std::size_t(name[1] - '0'));
        throw graph_error("differentiate: a rule fragment reads an unknown placeholder '" + name + "'");
      }, reduction ? &reduced_axes : nullptr);
    }
    for (std::size_t k = 0; k < n.inputs.size() && k < contributions.size(); ++k) {
      const std::uint32_t in = n.inputs[k];
      if (!contributions[k] || !needed[in]) continue;
      const graph_handle c = fit_adjoint(b, *contributions[k], x[k]);
      adjoint[in] = adjoint[in] ? b.apply(ops::add_op::name, {*adjoint[in], c}) : c;
    }
  }

  std::vector<graph_handle> outputs;
  for (auto o : g.outputs) outputs.push_back(b.handle(o));
  for (auto t : targets) {
    if (adjoint[t]) outputs.push_back(*adjoint[t]);
    else outputs.push_back(b.apply(ops::expand_as_op::name, {b.literal(0.0, b.type_of(t).type, true), b.handle(t)}));
  }
  // A rule yields the adjoints of all its operands, and a reduction's rule reads its value with the
  // reduced axes restored; where the operand is not differentiated or the fragment does not read
  // that value, those nodes feed no output. They go: a saved or drawn gradient graph holds only
  // what its outputs need.
  return without_dead_nodes(b.build(outputs));
}

// The gradient graph's leaves are g's, in g's order, then the rule fragments' constants: so a cached
// gradient becomes g's by taking g's leaves (their data) in place of the cached ones.
inline bool gradient_leaves_are_sources(const graph& g, const graph& dg) {
  if (dg.inputs.size() != g.inputs.size() || dg.parameters.size() != g.parameters.size() ||
      dg.constants.size() < g.constants.size())
    return false;
  for (std::size_t i = 0; i < g.inputs.size(); ++i)
    if (!plan_cache_detail::same_leaf(g.inputs[i], dg.inputs[i])) return false;
  for (std::size_t i = 0; i < g.parameters.size(); ++i)
    if (!plan_cache_detail::same_leaf(g.parameters[i], dg.parameters[i])) return false;
  for (std::size_t i = 0; i < g.constants.size(); ++i)
    if (g.constants[i].name != dg.constants[i].name || g.constants[i].type != dg.constants[i].type) return false;
  return true;
}

}  // namespace runtime_detail

// Gradient graphs by source structure and wrt list (plan_cache.hpp): the structure decides the
// gradient graph entirely, the source's data is copied in on a hit.
struct cached_gradient {
  graph_structure source;
  std::vector<std::string> wrt;
  graph gradient;  // without the source's data (strip_graph_data)
};
inline graph_lru_cache<cached_gradient>& gradient_cache() {
  static graph_lru_cache<cached_gradient>* cache = new graph_lru_cache<cached_gradient>(64);  // never destroyed
  return *cache;
}

// A graph whose outputs are g's outputs followed by the gradient of g's first output (a floating
// scalar) with respect to each named input or parameter, each shaped like it. Differentiating a
// graph of the same structure again (a loop that rebuilds its graph) takes the result from
// gradient_cache() and copies g's data into it. Compiled once per program under
// SYMFLOW_SEPARATE_COMPILATION (core/separate_compilation.hpp, SYMFLOW_LIBRARY_PART_PROGRAMS).
#if !SYMFLOW_LIBRARY_PROGRAMS_DECLARED_ONLY
SYMFLOW_LIBRARY_LINKAGE graph differentiate(const graph& g, const std::vector<std::string>& wrt) {
  using namespace runtime_detail;
  validate(g, "differentiate");  // the data too, which the cache's key leaves out
  const std::uint64_t structure = graph_structure_hash(g);
  plan_cache_detail::hasher h;
  h.add(structure);
  for (const auto& w : wrt) h.add(w);
  const std::uint64_t key = h.value();
  if (auto hit = gradient_cache().find(key, [&](const cached_gradient& e) {
        return e.wrt == wrt && e.source.matches(g, structure);
      })) {
    graph dg = hit->gradient;
    dg.inputs = g.inputs;
    dg.parameters = g.parameters;
    for (std::size_t i = 0; i < g.constants.size(); ++i) dg.constants[i] = g.constants[i];
    return dg;
  }
  graph dg = differentiate_uncached(g, wrt);
  if (gradient_leaves_are_sources(g, dg)) {
    graph kept = strip_graph_data(dg);
    for (std::size_t i = g.constants.size(); i < dg.constants.size(); ++i) kept.constants[i] = dg.constants[i];  // the rules'
    gradient_cache().insert(key, std::make_shared<const cached_gradient>(cached_gradient{graph_structure(g), wrt, std::move(kept)}));
  }
  return dg;
}
#endif

}  // namespace symflow
