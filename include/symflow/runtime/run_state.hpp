#pragma once
// The scratch of one interpreter run (interpreter.hpp): a slot per value (where its elements are and
// who owns them), the run's plan (every node's dtype and extents, the fusion groups), how many readers
// each value still has, and what the run reports (statistics, trace, profile). Here: binding the
// leaves, planning, counting uses, storage and the reports; computing the values is run_steps.hpp.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "../core/gemm.hpp"
#include "../core/params.hpp"
#include "../core/parallel.hpp"
#include "../ir/graph.hpp"
#include "../eval/numerics.hpp"
#include "../eval/placement_log.hpp"
#include "trace.hpp"
#include "buffer_pool.hpp"
#include "feeds.hpp"
#include "op_table.hpp"
#include "pass_cache.hpp"
#include "plan.hpp"
#include "plan_cache.hpp"
#include "run_options.hpp"
#include "../ir/value.hpp"

namespace symflow {

namespace runtime_detail {

// A value during a run: where its elements are and who owns them (a view may alias its operand's
// storage; a feed or a parameter is read where it lies).
struct slot {
  std::shared_ptr<runtime_tensor> owner;
  const void* data = nullptr;
  runtime_extents extents;
  dtype type = dtype::f32;
  bool ready = false;
  std::vector<std::size_t> strides{};  // empty: contiguous; else a matrix view read in place (read_in_place)
};

// What a run takes from the interpreter that starts it: the graph, the options, the structure its
// plans are cached under (plan_cache.hpp), the pool its values' storage comes from (buffer_pool.hpp)
// and the fused passes earlier runs built (pass_cache.hpp; none: each run builds its own).
struct run_context {
  const graph& g;
  const interpreter_options& options;
  const std::shared_ptr<const graph_structure>& structure;
  buffer_pool& pool;
  pass_cache* passes = nullptr;
};

struct run_state {
  const graph& g;
  const interpreter_options& options;
  const std::shared_ptr<const graph_structure>& structure;
  buffer_pool& pool;
  pass_cache* passes;
  const runtime_feeds& feeds;
  const params* store;
  const std::vector<bound_leaf>* bound = nullptr;  // run_bound's leaves, instead of feeds and store
  const bool checking;
  const std::size_t first_node;
  std::vector<slot> values;
  std::vector<std::optional<elementwise_kernel>> kernels;
  std::span<const int> group_of;  // per value id, the plan's; -1 outside any group
  std::span<const fusion_group> groups;  // the plan's
  std::shared_ptr<const runtime_plan> plan;
  std::vector<prepared_pass> prepared;  // per group: its pass, from `passes` or built by this run
  // Scratch of run_group (run_steps.hpp), kept for the run's passes.
  std::vector<const void*> pass_inputs;
  std::vector<void*> pass_storage, pass_reductions;
  std::vector<std::size_t> uses;  // consumers (units) still to run, plus output references
  std::vector<runtime_tensor>* reusable = nullptr;  // the caller's output tensors
  const std::vector<output_target>* targets = nullptr;  // or the caller's memory for each output
  interpreter_stats stats;
  value_trace trace;
  interpreter_profile profile;

  run_state(const run_context& c, const runtime_feeds& f, const params* p)
      : g(c.g), options(c.options), structure(c.structure), pool(c.pool), passes(c.passes), feeds(f), store(p),
        checking(options.check_numerics.value_or(check_numerics_enabled())),
        first_node(g.inputs.size() + g.parameters.size() + g.constants.size()),
        values(first_node + g.nodes.size()), kernels(values.size()), uses(values.size(), 0) {}
  run_state(const run_state&) = delete;
  run_state& operator=(const run_state&) = delete;
  // The passes go back for the next run of the plan (pointing at this run's memory until rebound).
  ~run_state() {
    if (passes && plan) passes->give(plan, std::move(prepared));
  }

  const graph_node& node(std::uint32_t id) const { return g.nodes[id - first_node]; }
  bool is_node(std::uint32_t id) const { return id >= first_node; }
  std::string who(std::uint32_t id) const {
    const auto& n = node(id);
    return n.op + " '" + n.name + "'" + (n.where.line ? " (" + n.where.file + ":" + std::to_string(n.where.line) + ")" : "");
  }
  std::string value_type_string(std::uint32_t id) const {
    return std::string(dtype_name(values[id].type)) + format_extents(values[id].extents);
  }

  // --- Leaves: inputs, parameters and constants are read where they lie.

  static void check_leaf(const std::string& what, const graph_leaf& leaf, dtype type, const runtime_extents& e) {
    bool ok = type == leaf.type.type && e.size() == leaf.type.shape.size();
    for (std::size_t i = 0; ok && i < e.size(); ++i) ok = leaf.type.shape[i] < 0 || std::size_t(leaf.type.shape[i]) == e[i];
    if (!ok)
      throw shape_error("interpreter: " + what + " '" + leaf.name + "' is " + std::string(dtype_name(type)) +
                        format_extents(e) + ", the graph expects " + graph_type_string(leaf.type));
  }

  void bind_leaves(const runtime_feeds& feeds, const params* store) {
    if (!options.allow_unused_feeds) check_feeds_name_leaves(g, feeds);
    std::uint32_t id = 0;
    for (const auto& in : g.inputs) {
      auto it = feeds.find(in.name);
      if (it == feeds.end()) throw value_error("interpreter: no feed for input '" + in.name + "'");
      check_leaf("input", in, it->second.type(), it->second.extents());
      values[id++] = slot{nullptr, it->second.bytes(), it->second.extents(), it->second.type(), true};
    }
    for (const auto& p : g.parameters) {
      if (auto it = feeds.find(p.name); it != feeds.end()) {  // a feed wins over the store, as in eval
        check_leaf("parameter", p, it->second.type(), it->second.extents());
        values[id++] = slot{nullptr, it->second.bytes(), it->second.extents(), it->second.type(), true};
      } else if (store && store->contains(p.name)) {
        const auto& e = store->at(p.name);
        check_leaf("parameter", p, e.type, e.extents);
        values[id++] = slot{nullptr, e.bytes.data(), e.extents, e.type, true};
      } else if (p.value) {
        runtime_extents e(p.value->extents.begin(), p.value->extents.end());
        values[id++] = slot{nullptr, p.value->bytes.data(), e, p.value->type, true};
      } else {
        throw value_error("interpreter: no value for parameter '" + p.name +
                          "' (neither in the parameter store nor embedded in the graph)");
      }
    }
    bind_constants(id);
  }

  void bind_constants(std::uint32_t id) {
    for (const auto& c : g.constants) {
      runtime_extents e(c.data.extents.begin(), c.data.extents.end());
      values[id++] = slot{nullptr, c.data.bytes.data(), e, c.data.type, true};
    }
  }
  void bind_bound(const std::vector<bound_leaf>& leaves) {
    std::uint32_t id = 0;
    for (const auto* list : {&g.inputs, &g.parameters})
      for (const auto& leaf : *list) {
        const bound_leaf& b = leaves[id];
        check_leaf(list == &g.inputs ? "input" : "parameter", leaf, b.type, b.extents);
        values[id++] = slot{nullptr, b.data, b.extents, b.type, true};
      }
    bind_constants(id);
  }

  // --- Plan and uses.

  // Extents and dtypes of every node from its operands', checked against the graph's types, and the
  // fusion groups (plan.hpp, shared with the GPU graph runner): from runtime_plan_cache() when this
  // structure ran with these leaf dtypes and extents before (plan_cache.hpp).
  void plan_run() {
    std::vector<dtype> leaf_types(first_node);
    std::vector<runtime_extents> leaf_extents(first_node);
    for (std::size_t id = 0; id < first_node; ++id) leaf_types[id] = values[id].type, leaf_extents[id] = values[id].extents;
    // Runs that check numerics or trace values store every value they check or record, and run
    // every reduction as a unit of its own.
    const bool reporting = checking || options.trace;
    plan = plan_for(g, structure, std::move(leaf_types), std::move(leaf_extents), options.fuse,
                    options.recompute && !reporting, options.fuse_row_reductions && !reporting);
    for (std::size_t id = first_node; id < values.size(); ++id) {
      values[id].type = plan->types.type[id];
      values[id].extents = plan->types.extents[id];
      kernels[id] = plan->types.kernel[id];
    }
    group_of = plan->fusion.group_of;
    groups = plan->fusion.groups;
    prepared = passes ? passes->take(plan) : std::vector<prepared_pass>(groups.size());
  }

  std::vector<bool> reduced_mask(std::uint32_t id) const {
    const auto& n = node(id);
    return reduced_axes_mask(who(id), node_attributes(n), values[n.inputs.at(0)].extents.size());
  }

  // The group whose pass computes value id (a member or a reduction over its rows), or -1.
  int unit_of(std::uint32_t id) const { return plan->fusion.unit_of(id); }

  // Whether group gi's pass computes value v itself (a member, or one it recomputes).
  bool in_pass(int gi, std::uint32_t v) const {
    if (group_of[v] == gi) return true;
    const auto& r = groups[std::size_t(gi)].recomputed;
    return !r.empty() && std::binary_search(r.begin(), r.end(), v);
  }

  // Which values are read from memory by another unit (or are outputs): those are stored.
  void count_uses() {
    for (std::uint32_t id = std::uint32_t(first_node); id < values.size(); ++id)
      for (auto i : node(id).inputs)
        if (const int unit = unit_of(id); unit < 0 || !in_pass(unit, i)) ++uses[i];
    for (std::size_t gi = 0; gi < groups.size(); ++gi)  // what passes read to recompute values
      for (auto r : groups[gi].recomputed)
        for (auto i : node(r).inputs)
          if (!in_pass(int(gi), i)) ++uses[i];
    for (auto o : g.outputs) ++uses[o];
    if (options.trace)
      for (std::uint32_t id = std::uint32_t(first_node); id < values.size(); ++id)
        if (!node(id).is_literal() && options.trace->level_for(node(id).name) != trace_level::none)
          ++uses[id];  // stored, and kept until the run ends
  }

  // --- Storage.

  slot& fresh(std::uint32_t id) {
    slot& v = values[id];
    v.strides.clear();
    if (targets) {
      // The first position this value has among the outputs: written where the caller wants it.
      const auto at = std::find(g.outputs.begin(), g.outputs.end(), id);
      if (at != g.outputs.end()) {
        const output_target& t = (*targets)[std::size_t(at - g.outputs.begin())];
        if (t.type == v.type && t.extents == v.extents && (t.data || !element_count(v.extents))) {
          v.owner.reset();
          v.data = t.data;
          v.ready = true;
          ++stats.materialised_values;
          return v;
        }
      }
    } else if (reusable) {
      // The first position this value has among the outputs: its tensor is written in place.
      const auto at = std::find(g.outputs.begin(), g.outputs.end(), id);
      if (at != g.outputs.end()) {
        runtime_tensor& out = (*reusable)[std::size_t(at - g.outputs.begin())];
        if (out.type() == v.type && out.extents() == v.extents && (out.byte_size() || !element_count(v.extents))) {
          v.owner.reset();
          v.data = out.bytes();
          v.ready = true;
          ++stats.materialised_values;
          return v;
        }
      }
    }
    v.owner = pool.acquire(v.type, v.extents);
    v.data = v.owner->bytes();
    v.ready = true;
    ++stats.materialised_values;
    return v;
  }
  runtime_array array_of(std::uint32_t id) const {
    const slot& v = values[id];
    return runtime_array{v.type, v.extents, const_cast<void*>(v.data), v.strides};
  }

  // Whether view `id`, whose layout l is not contiguous, may stay where it lies instead of being
  // copied: a matrix the GEMM reads as it lies (core/gemm.hpp: one unit stride, no overlapping
  // lines) that only kernels taking strided matrices read (matmul: a gradient's x^T and W^T), outside
  // fused passes; not an output, and not in a run whose checks or trace read values as arrays.
  bool read_in_place(std::uint32_t id, const runtime_layout& l) {
    if (checking || options.trace || l.extents.size() != 2) return false;
    strided_matrix<const char> m;
    if (!matrix_layout<const char>(nullptr, l.extents[0], l.extents[1], l.strides[0], l.strides[1], m)) return false;
    if (std::find(g.outputs.begin(), g.outputs.end(), id) != g.outputs.end()) return false;
    // The readers, found by a scan of the nodes (a few views per run; an index of every value's
    // readers cost an allocation per node and run).
    bool read = false;
    for (std::uint32_t r = std::uint32_t(first_node); r < values.size(); ++r) {
      const auto& in = node(r).inputs;
      if (std::find(in.begin(), in.end(), id) == in.end()) continue;
      read = true;
      if (group_of[r] >= 0) return false;
      const runtime_op* op = find_runtime_op(node(r).op);  // nullptr for control flow
      if (!op || !op->strided_matrix_operands) return false;
    }
    return read;
  }

  void release_inputs_of(const std::vector<std::uint32_t>& readers, int own_group) {
    for (auto r : readers)
      for (auto i : node(r).inputs) {
        if (own_group >= 0 && in_pass(own_group, i)) continue;
        if (--uses[i] == 0 && values[i].owner) {
          values[i].owner.reset();
          values[i].data = nullptr;
        }
      }
  }

  // Outputs computed into the caller's tensors are already in place; those computed into storage of
  // their own are moved out; the rest (feeds, aliases, repeats) are copied.
  void take_outputs(std::vector<runtime_tensor>& out) {
    for (std::size_t k = 0; k < g.outputs.size(); ++k) {
      slot& v = values[g.outputs[k]];
      if (v.data == out[k].bytes() && out[k].extents() == v.extents && out[k].type() == v.type) continue;
      const bool repeated = std::count(g.outputs.begin() + std::ptrdiff_t(k) + 1, g.outputs.end(), g.outputs[k]) > 0;
      // Held by this slot alone beside the pool, where every value's storage comes from (fresh);
      // the pool drops it once it is moved out.
      if (!repeated && v.owner && v.owner.use_count() == 2 && v.data == v.owner->bytes() &&
          v.owner->extents() == v.extents) {
        out[k] = std::move(*v.owner);
        v.data = out[k].bytes();
        continue;
      }
      runtime_tensor t(v.type, v.extents);
      if (t.byte_size()) std::memcpy(t.bytes(), v.data, t.byte_size());
      out[k] = std::move(t);
    }
  }

  // After a run into targets: outputs not computed in place (leaves, views, repeats) are copied;
  // each must have its target's dtype and extents.
  void write_targets() const {
    for (std::size_t k = 0; k < g.outputs.size(); ++k) {
      const slot& v = values[g.outputs[k]];
      const output_target& t = (*targets)[k];
      if (v.type != t.type || v.extents != t.extents)
        throw shape_error("interpreter: output " + std::to_string(k) + " is " + std::string(dtype_name(v.type)) +
                          format_extents(v.extents) + ", expected " + std::string(dtype_name(t.type)) +
                          format_extents(t.extents));
      const std::size_t bytes = element_count(v.extents) * dtype_size(v.type);
      if (v.data != t.data && bytes) std::memcpy(t.data, v.data, bytes);
    }
  }

  // --- Reports.

  bool describing() const { return options.profile || host_placement_log_enabled(); }
  // Times `work` into the profile and logs its placement, when either is on.
  template <class Describe, class Work>
  void account(Describe&& describe, Work&& work) {
    if (!describing()) {
      work();
      return;
    }
    const std::string what = describe();
    if (host_placement_log_enabled())
      log_host_placement("cpu (" + std::to_string(cpu::max_threads()) + " threads): " + what);
    const auto start = std::chrono::steady_clock::now();
    work();
    if (options.profile)
      profile.entries.push_back(
          {what, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()});
  }

  void record(std::uint32_t id) {
    if (!options.trace || node(id).is_literal()) return;
    const auto& n = node(id);
    const trace_level level = options.trace->level_for(n.name);
    if (level == trace_level::none) return;
    const slot& v = values[id];
    trace.entries.push_back(trace_value(n.name, n.op, n.where.line ? n.where.file + ":" + std::to_string(n.where.line) : "",
                                        level, v.type, v.extents, v.data));
  }
};

}  // namespace runtime_detail

}  // namespace symflow
