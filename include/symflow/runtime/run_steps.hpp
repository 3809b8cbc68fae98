#pragma once
// The steps of an interpreter run (interpreter.hpp) over its scratch (run_state.hpp): which unit runs
// next (depth first from the outputs, so only what they need is computed), how one node or one fused
// group runs, and where a NaN or infinity first appeared when numerics are checked.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "../eval/numerics.hpp"
#include "../ir/control_flow/list.hpp"
#include "fused_pass.hpp"
#include "op_table.hpp"
#include "run_state.hpp"
#include "strided_copy.hpp"

namespace symflow {

namespace runtime_detail {

// A fused pass produced NaN or infinities: which node did (below).
[[noreturn]] inline void localise(const run_state& s);
// A control-flow node (ir/control_flow/), its sub-graphs run by a body_runner (below).
inline void run_control_flow(run_state& s, std::uint32_t id);

// The values a group's pass reads from memory, each once: the inputs of its members and of the
// values it recomputes (recompute_plan.hpp) that it does not compute itself. Found once per plan
// (kept with the group's prepared pass).
inline const std::vector<std::uint32_t>& group_externals(run_state& s, int gi) {
  prepared_pass& pp = s.prepared[std::size_t(gi)];
  if (!pp.order.empty()) return pp.externals;
  const fusion_group& gr = s.groups[std::size_t(gi)];
  for (const auto* list : {&gr.recomputed, &gr.members})
    for (auto m : *list)
      for (auto i : s.node(m).inputs)
        if (!s.in_pass(gi, i) && std::find(pp.externals.begin(), pp.externals.end(), i) == pp.externals.end())
          pp.externals.push_back(i);
  pp.order = gr.recomputed;  // evaluation order: recomputed values, then members
  pp.order.insert(pp.order.end(), gr.members.begin(), gr.members.end());
  pp.stored.assign(pp.order.size(), 0);
  return pp.externals;
}

// --- Numerics.

inline numerics_error nonfinite_error(const run_state& s, std::uint32_t id) {
  const auto& n = s.node(id);
  const slot& v = s.values[id];
  std::vector<numerics_error::operand> operands;
  for (auto i : n.inputs) {
    const slot& x = s.values[i];
    std::string d = s.is_node(i) ? s.node(i).op + " '" + s.node(i).name + "'" : "value " + std::to_string(i);
    if (!s.is_node(i)) d = s.g.describe_value(i);
    operands.push_back({d + " " + std::string(dtype_name(x.type)) + format_extents(x.extents),
                        health_of(x.type, x.data, element_count(x.extents))});
  }
  return numerics_error(n.op, n.name, n.where.line ? n.where.file + ":" + std::to_string(n.where.line) : "", v.type,
                        v.extents, health_of(v.type, v.data, element_count(v.extents)), std::move(operands));
}

// A value with NaN or infinities: in a fused run, re-run node by node to find the node that
// produced it first; node by node, that is this one.
inline void check_finite(const run_state& s, std::uint32_t id) {
  const slot& v = s.values[id];
  if (all_finite(v.type, v.data, element_count(v.extents))) return;
  if (s.options.fuse) localise(s);
  throw nonfinite_error(s, id);
}

// --- Units: a node outside any group, or a fused group.

inline void run_node(run_state& s, std::uint32_t id) {
  const auto& n = s.node(id);
  const node_attributes attrs(n);
  if (n.is_literal()) {
    slot& v = s.fresh(id);
    const attribute_value* a = n.attribute("value");
    visit_compute_dtype(v.type, [&](auto t) {
      using T = decltype(t);
      T x{};
      if (a && std::holds_alternative<bool>(*a)) x = T(std::get<bool>(*a));
      else if (a && std::holds_alternative<std::int64_t>(*a)) x = T(std::get<std::int64_t>(*a));
      else x = T(attrs.number("value"));
      *v.owner->template data<T>() = x;
    });
    --s.stats.materialised_values;  // a scalar, not a pass over memory
    return;
  }
  if (control_flow::is_control_flow(n.op)) return run_control_flow(s, id);
  const runtime_op& op = *find_runtime_op(n.op);
  switch (op.kind) {
    case node_kind::reduction: {
      const auto mask = s.reduced_mask(id);
      s.fresh(id);
      op.reduce(s.array_of(n.inputs[0]), mask, s.array_of(id));
      break;
    }
    case node_kind::view: {
      const slot& in = s.values[n.inputs[0]];
      const auto l = op.view(attrs, runtime_layout::contiguous(in.extents), s.who(id));
      slot& v = s.values[id];
      const std::size_t esize = dtype_size(v.type);
      const bool contiguous = is_contiguous(l);
      if (contiguous || s.read_in_place(id, l)) {
        v.owner = in.owner;  // shares the operand's storage
        // An empty operand may have no storage at all: no offset into a null pointer.
        v.data = in.data ? static_cast<const char*>(in.data) + l.offset * esize : nullptr;
        v.strides = contiguous ? std::vector<std::size_t>{} : l.strides;
        v.ready = true;
      } else {
        s.fresh(id);
        copy_strided(static_cast<const char*>(in.data), l, static_cast<char*>(const_cast<void*>(v.data)), esize);
      }
      break;
    }
    default: {
      std::vector<runtime_array> in;
      for (auto i : n.inputs) in.push_back(s.array_of(i));
      s.fresh(id);
      op.kernel_run(attrs, s.array_of(id), in);
    }
  }
}

// A node outside any group, its inputs ready.
inline void run_single(run_state& s, std::uint32_t id) {
  const auto& n = s.node(id);
  if (n.is_literal()) run_node(s, id);
  else s.account([&] { return n.op + " '" + n.name + "' -> " + s.value_type_string(id); }, [&] { run_node(s, id); });
  if (s.checking && !n.is_literal()) check_finite(s, id);
  s.record(id);
  s.release_inputs_of({id}, -1);
}

// The group's pass as this run needs it: the one an earlier run of the plan built (pass_cache.hpp),
// rebound to this run's memory, or built now when there is none or what it stores differs.
inline fused_pass& group_pass(run_state& s, int gi, bool rebuild) {
  prepared_pass& pp = s.prepared[std::size_t(gi)];
  const fusion_group& gr = s.groups[std::size_t(gi)];
  const auto& externals = pp.externals;
  const auto& order = pp.order;
  if (!rebuild) {
    s.pass_inputs.clear();
    s.pass_storage.clear();
    s.pass_reductions.clear();
    for (auto x : externals) s.pass_inputs.push_back(s.values[x].data);
    for (std::size_t k = 0; k < order.size(); ++k)
      s.pass_storage.push_back(pp.stored[k] ? const_cast<void*>(s.values[order[k]].data) : nullptr);
    for (auto r : gr.reductions) s.pass_reductions.push_back(const_cast<void*>(s.values[r].data));
    pp.pass->rebind(s.pass_inputs, s.pass_storage, s.pass_reductions);
    return *pp.pass;
  }
  std::vector<fused_pass_input> inputs;
  for (auto x : externals) inputs.push_back({s.values[x].data, s.values[x].type, s.values[x].extents});
  std::vector<fused_pass_member> program;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const graph_node& n = s.node(order[k]);
    fused_pass_member m{*s.kernels[order[k]], n.op, {}, s.values[order[k]].type,
                        pp.stored[k] ? const_cast<void*>(s.values[order[k]].data) : nullptr};
    for (auto i : n.inputs)
      m.operands.push_back(s.in_pass(gi, i)
                               ? externals.size() + std::size_t(std::find(order.begin(), order.end(), i) - order.begin())
                               : std::size_t(std::find(externals.begin(), externals.end(), i) - externals.begin()));
    program.push_back(std::move(m));
  }
  std::vector<fused_pass_reduction> reductions;
  for (std::size_t k = 0; k < gr.reductions.size(); ++k) {
    const std::uint32_t r = gr.reductions[k], v = s.node(r).inputs[0];
    const runtime_op* op = find_runtime_op(s.node(r).op);
    reductions.push_back({std::size_t(std::find(order.begin(), order.end(), v) - order.begin()), op->reduce_rows,
                          gr.over_columns[k] ? &op->reduce_columns : nullptr, const_cast<void*>(s.values[r].data)});
  }
  pp.checking = s.checking;
  pp.pass = std::make_unique<fused_pass>(std::move(inputs), std::move(program), gr.extents, s.options, s.checking,
                                         std::move(reductions));
  return *pp.pass;
}

// One pass over the group's extents (fused_pass.hpp), its external inputs ready; stored members are
// written to their storage, the others (and the values it recomputes, first) live in tile buffers
// or registers.
inline void run_group(run_state& s, int gi) {
  const fusion_group& gr = s.groups[std::size_t(gi)];
  const auto& members = gr.members;
  group_externals(s, gi);  // and the order, once per plan
  prepared_pass& pp = s.prepared[std::size_t(gi)];
  const auto& order = pp.order;
  const std::size_t first_member = gr.recomputed.size();

  bool rebuild = !pp.pass || pp.checking != s.checking;
  for (std::size_t k = first_member; k < order.size(); ++k) {
    const char stored = s.uses[order[k]] > 0;
    rebuild = rebuild || pp.stored[k] != stored;
    pp.stored[k] = stored;
    if (stored) s.fresh(order[k]);
  }
  for (auto r : gr.reductions) s.fresh(r);
  ++s.stats.fused_groups;
  s.stats.fused_nodes += members.size();
  s.stats.recomputed_nodes += gr.recomputed.size();
  s.stats.fused_reductions += gr.reductions.size();
  fused_pass& pass = group_pass(s, gi, rebuild);
  if (!rebuild) ++s.stats.reused_passes;
  if (pass.native()) ++s.stats.native_passes;
  s.stats.chained_nodes += pass.chained();
  bool nonfinite = false;
  s.account(
      [&] {
        std::string ops;
        for (std::size_t k = 0; k < order.size(); ++k)
          ops += (ops.empty() ? "" : ", ") + std::string(k < first_member ? "recomputed " : "") + s.node(order[k]).op +
                 " '" + s.node(order[k]).name + "'";
        for (std::size_t k = 0; k < gr.reductions.size(); ++k)
          ops += ", then " + s.node(gr.reductions[k]).op + " '" + s.node(gr.reductions[k]).name + "' over " +
                 (gr.over_columns[k] ? "columns" : "rows");
        return "fused pass [" + ops + "] over " + std::string(dtype_name(s.values[members.back()].type)) +
               format_extents(gr.extents) + ", tile " + std::to_string(pass.tile()) +
               (pass.rows_per_tile() > 1 ? " (" + std::to_string(pass.rows_per_tile()) + " rows)" : "") +
               (pass.native() ? ", generated code" : "");
      },
      [&] { nonfinite = pass.run(); });
  if (nonfinite) {
    if (members.size() == 1) throw nonfinite_error(s, members[0]);
    localise(s);
  }
  for (std::size_t k = first_member; k < order.size(); ++k) {
    s.values[order[k]].ready = true;
    if (pp.stored[k]) s.record(order[k]);
  }
  for (auto r : gr.reductions) s.record(r);  // ready since fresh()
  s.release_inputs_of(order, gi);
}

// --- Order.

// Computes `root` and what it needs, depth first, with a stack of its own: a gradient's graph is
// a chain hundreds of nodes deep, which must not take a native stack frame per node.
inline void ensure(run_state& s, std::uint32_t root) {
  std::vector<std::uint32_t> pending{root};
  while (!pending.empty()) {
    const std::uint32_t id = pending.back();
    if (s.values[id].ready) {
      pending.pop_back();
      continue;
    }
    const int gi = s.unit_of(id);
    bool waiting = false;
    for (auto i : gi >= 0 ? group_externals(s, gi) : s.node(id).inputs)
      if (!s.values[i].ready) pending.push_back(i), waiting = true;
    if (waiting) continue;
    pending.pop_back();
    if (gi >= 0) run_group(s, gi);
    else run_single(s, id);
  }
}

// Plans the run (its leaves bound) and computes the graph's outputs, writing into `outputs` where
// their dtypes and extents allow (run_state::take_outputs hands them over).
inline void compute_outputs(run_state& s, std::vector<runtime_tensor>& outputs) {
  s.plan_run();
  s.count_uses();
  s.reusable = &outputs;
  for (auto id : s.g.outputs) ensure(s, id);
}

// Runs the sub-graphs of one control-flow node: each body keeps its structure (the plan cache's
// key), its storage pool and its outputs from one call to the next, so a loop's steps after the
// first reuse the first's plan and memory.
class body_runner {
 public:
  explicit body_runner(const interpreter_options& options) : options_(options) {}

  std::vector<runtime_extents> extents(const graph& body, const std::vector<dtype>& types,
                                       const std::vector<runtime_extents>& args) const {
    return body_extents{}.extents(body, types, args);
  }

  // The body's outputs for these arguments (its inputs, in order); valid until its next call.
  const std::vector<runtime_tensor>& call(const graph& body, const std::vector<runtime_array>& args) {
    body_call& c = call_of(body);
    c.leaves.clear();
    for (const auto& a : args) c.leaves.push_back(bound_leaf{a.type, a.extents, a.data});
    static const runtime_feeds no_feeds;
    run_state s({body, options_, c.structure, c.pool, &c.passes}, no_feeds, nullptr);
    s.bound = &c.leaves;
    s.bind_bound(c.leaves);
    c.outputs.resize(body.outputs.size());
    compute_outputs(s, c.outputs);
    s.take_outputs(c.outputs);
    return c.outputs;
  }

 private:
  struct body_call {
    const graph* body;
    std::shared_ptr<const graph_structure> structure;
    buffer_pool pool;
    pass_cache passes;
    std::vector<bound_leaf> leaves;
    std::vector<runtime_tensor> outputs;
  };
  body_call& call_of(const graph& body) {
    for (auto& c : calls_)
      if (c->body == &body) return *c;
    calls_.push_back(std::make_unique<body_call>());
    calls_.back()->body = &body;
    calls_.back()->structure = std::make_shared<const graph_structure>(body);
    return *calls_.back();
  }
  const interpreter_options& options_;
  std::vector<std::unique_ptr<body_call>> calls_;
};

inline void run_control_flow(run_state& s, std::uint32_t id) {
  const auto& n = s.node(id);
  std::vector<runtime_array> in;
  for (auto i : n.inputs) in.push_back(s.array_of(i));
  s.fresh(id);
  body_runner runner(s.options);
  control_flow::visit(n.op, [&](auto op) { op.run(runner, n, s.array_of(id), in, s.who(id)); });
}

// A fused pass produced NaN or infinities: the same leaves run again node by node with checks on,
// which throws the error of the first node that produced them.
[[noreturn]] inline void localise(const run_state& s) {
  interpreter_options unfused = s.options;
  unfused.fuse = false;
  unfused.check_numerics = true;
  buffer_pool pool;  // as a fresh interpreter's
  run_state again({s.g, unfused, s.structure, pool}, s.feeds, s.store);
  if (s.bound) {
    again.bound = s.bound;
    again.bind_bound(*s.bound);
  } else {
    again.bind_leaves(s.feeds, s.store);
  }
  std::vector<runtime_tensor> ignored(s.g.outputs.size());
  compute_outputs(again, ignored);
  throw numerics_error("interpreter", "?", "", dtype::f32, {}, {}, {},
                       "a fused pass produced NaN or infinities that a node-by-node run does not");
}

}  // namespace runtime_detail

}  // namespace symflow
