#pragma once
// Evaluates a graph value on the CPU. Per run: every node's extents are inferred from the feeds
// (by the ops' runtime forms) and checked against the graph's types; elementwise nodes of equal
// extents are fused into groups, each run as one pass over memory in cache-sized tiles (one SIMD loop
// per op over a tile held in L1, so a chain of N ops reads its operands and writes its results once);
// reductions, views and kernels (Eigen GEMM for matmul) run between the groups. Only what the outputs
// need is computed, and intermediates are freed after their last use.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "../../core/params.hpp"
#include "../../eval/cpu/parallel.hpp"
#include "../graph.hpp"
#include "../validate.hpp"
#include "../../debug/nonfinite_report.hpp"
#include "../../debug/placement_log.hpp"
#include "../../debug/trace.hpp"
#include "buffer_pool.hpp"
#include "feeds.hpp"
#include "fused_pass.hpp"
#include "op_table.hpp"
#include "plan.hpp"
#include "plan_cache.hpp"
#include "run_options.hpp"
#include "strided_copy.hpp"
#include "value.hpp"

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
};

}  // namespace runtime_detail

class interpreter {
 public:
  explicit interpreter(graph g, interpreter_options options = {}) : graph_(std::move(g)), options_(options) {
    validate(graph_, "interpreter");
    for (const auto& n : graph_.nodes)
      if (!n.is_literal() && !find_runtime_op(n.op))
        throw graph_error("interpreter: node '" + n.name + "': no runtime form for op '" + n.op + "'");
    structure_ = std::make_shared<const graph_structure>(graph_);
  }

  const graph& source() const noexcept { return graph_; }
  // The structure its plans are cached under (plan_cache.hpp).
  const std::shared_ptr<const graph_structure>& structure() const noexcept { return structure_; }
  const interpreter_stats& last_stats() const noexcept { return stats_; }
  // What the last run recorded under options.trace, in evaluation order.
  const value_trace& last_trace() const noexcept { return trace_; }
  // Per-unit timings of the last run under options.profile.
  const interpreter_profile& last_profile() const noexcept { return profile_; }

  // The graph's outputs for these feeds (by input name). Parameters come from `store` when it holds
  // them, else from the values embedded in the graph.
  std::vector<runtime_tensor> run(const runtime_feeds& feeds, const params* store = nullptr) const {
    std::vector<runtime_tensor> outputs;
    run_into(outputs, feeds, store);
    return outputs;
  }

  // As run, writing into `outputs` and reusing each tensor's storage when its dtype and extents are
  // already right (first touching fresh memory costs about as much as a memory-bound pass; a loop
  // that runs a graph repeatedly should keep its outputs).
  void run_into(std::vector<runtime_tensor>& outputs, const runtime_feeds& feeds, const params* store = nullptr) const {
    outputs.resize(graph_.outputs.size());
    run_state s(*this, feeds, store);
    s.bind_leaves(feeds, store);
    finish_run(s, outputs);
  }

  // As run_into, with every input and parameter bound where its value lies (graph leaf order:
  // inputs, then parameters): nothing is copied in.
  void run_bound(std::vector<runtime_tensor>& outputs, const std::vector<bound_leaf>& leaves) const {
    if (leaves.size() != graph_.inputs.size() + graph_.parameters.size())
      throw value_error("interpreter: " + std::to_string(leaves.size()) + " bound leaves for a graph with " +
                        std::to_string(graph_.inputs.size() + graph_.parameters.size()) + " inputs and parameters");
    outputs.resize(graph_.outputs.size());
    static const runtime_feeds no_feeds;
    run_state s(*this, no_feeds, nullptr);
    s.bound = &leaves;
    s.bind_bound(leaves);
    finish_run(s, outputs);
  }

 private:
  struct run_state;
  void finish_run(run_state& s, std::vector<runtime_tensor>& outputs) const {
    s.plan_run();
    s.count_uses();
    s.reusable = &outputs;
    for (auto id : graph_.outputs) s.ensure(id);
    stats_ = s.stats;
    trace_ = std::move(s.trace);
    profile_ = std::move(s.profile);
    s.take_outputs(outputs);
  }

  using slot = runtime_detail::slot;

  using group = fusion_group;

  struct run_state {
    const interpreter& self;
    const graph& g;
    const runtime_feeds& feeds;
    const params* store;
    const std::vector<bound_leaf>* bound = nullptr;  // run_bound's leaves, instead of feeds and store
    const bool checking;
    const std::size_t first_node;
    std::vector<slot> values;
    std::vector<std::optional<elementwise_kernel>> kernels;
    std::vector<int> group_of;  // per value id; -1 outside any group
    std::vector<group> groups;
    std::shared_ptr<const runtime_plan> plan;
    std::vector<std::size_t> uses;  // consumers (units) still to run, plus output references
    interpreter_stats stats;
    value_trace trace;
    interpreter_profile profile;

    bool describing() const { return self.options_.profile || host_placement_log_enabled(); }
    std::string value_type_string(std::uint32_t id) const {
      return std::string(dtype_name(values[id].type)) + format_extents(values[id].extents);
    }
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
      if (self.options_.profile)
        profile.entries.push_back(
            {what, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()});
    }

    run_state(const interpreter& i, const runtime_feeds& f, const params* p)
        : self(i), g(i.graph_), feeds(f), store(p),
          checking(i.options_.check_numerics.value_or(check_numerics_enabled())), first_node(g.inputs.size() + g.parameters.size() + g.constants.size()),
          values(first_node + g.nodes.size()), kernels(values.size()), group_of(values.size(), -1),
          uses(values.size(), 0) {}

    const graph_node& node(std::uint32_t id) const { return g.nodes[id - first_node]; }
    bool is_node(std::uint32_t id) const { return id >= first_node; }
    std::string who(std::uint32_t id) const {
      const auto& n = node(id);
      return n.op + " '" + n.name + "'" + (n.where.line ? " (" + n.where.file + ":" + std::to_string(n.where.line) + ")" : "");
    }

    static void check_leaf(const std::string& what, const graph_leaf& leaf, dtype type, const runtime_extents& e) {
      bool ok = type == leaf.type.type && e.size() == leaf.type.shape.size();
      for (std::size_t i = 0; ok && i < e.size(); ++i) ok = leaf.type.shape[i] < 0 || std::size_t(leaf.type.shape[i]) == e[i];
      if (!ok)
        throw shape_error("interpreter: " + what + " '" + leaf.name + "' is " + std::string(dtype_name(type)) +
                          format_extents(e) + ", the graph expects " + graph_type_string(leaf.type));
    }

    void bind_leaves(const runtime_feeds& feeds, const params* store) {
      if (!self.options_.allow_unused_feeds) check_feeds_name_leaves(g, feeds);
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

    // Extents and dtypes of every node from its operands', checked against the graph's types, and the
    // fusion groups (plan.hpp, shared with the GPU graph runner): from runtime_plan_cache() when this
    // structure ran with these leaf dtypes and extents before (plan_cache.hpp).
    void plan_run() {
      std::vector<dtype> leaf_types(first_node);
      std::vector<runtime_extents> leaf_extents(first_node);
      for (std::size_t id = 0; id < first_node; ++id) leaf_types[id] = values[id].type, leaf_extents[id] = values[id].extents;
      plan = plan_for(g, self.structure_, std::move(leaf_types), std::move(leaf_extents), self.options_.fuse);
      for (std::size_t id = first_node; id < values.size(); ++id) {
        values[id].type = plan->types.type[id];
        values[id].extents = plan->types.extents[id];
        kernels[id] = plan->types.kernel[id];
      }
      group_of = plan->fusion.group_of;
      groups = plan->fusion.groups;
    }

    std::vector<bool> reduced_mask(std::uint32_t id) const {
      const auto& n = node(id);
      return reduced_axes_mask(who(id), node_attributes(n), values[n.inputs.at(0)].extents.size());
    }

    // Which values are read from memory by another unit (or are outputs): those are stored.
    void count_uses() {
      for (std::uint32_t id = std::uint32_t(first_node); id < values.size(); ++id)
        for (auto i : node(id).inputs)
          if (group_of[id] < 0 || group_of[i] != group_of[id]) ++uses[i];
      for (auto o : g.outputs) ++uses[o];
      if (self.options_.trace)
        for (std::uint32_t id = std::uint32_t(first_node); id < values.size(); ++id)
          if (!node(id).is_literal() && self.options_.trace->level_for(node(id).name) != trace_level::none)
            ++uses[id];  // stored, and kept until the run ends
    }

    void record(std::uint32_t id) {
      if (!self.options_.trace || node(id).is_literal()) return;
      const auto& n = node(id);
      const trace_level level = self.options_.trace->level_for(n.name);
      if (level == trace_level::none) return;
      const slot& v = values[id];
      trace.entries.push_back(trace_value(n.name, n.op, n.where.line ? n.where.file + ":" + std::to_string(n.where.line) : "",
                                          level, v.type, v.extents, v.data));
    }

    void release_inputs_of(const std::vector<std::uint32_t>& readers, int own_group) {
      for (auto r : readers)
        for (auto i : node(r).inputs) {
          if (own_group >= 0 && group_of[i] == own_group) continue;
          if (--uses[i] == 0 && values[i].owner) {
            values[i].owner.reset();
            values[i].data = nullptr;
          }
        }
    }

    // Computes `root` and what it needs, depth first, with a stack of its own: a gradient's graph is
    // a chain hundreds of nodes deep, which must not take a native stack frame per node.
    void ensure(std::uint32_t root) {
      std::vector<std::uint32_t> pending{root};
      while (!pending.empty()) {
        const std::uint32_t id = pending.back();
        if (values[id].ready) {
          pending.pop_back();
          continue;
        }
        const int gi = group_of[id];
        bool waiting = false;
        for (auto i : gi >= 0 ? group_externals(gi) : node(id).inputs)
          if (!values[i].ready) pending.push_back(i), waiting = true;
        if (waiting) continue;
        pending.pop_back();
        if (gi >= 0) run_group(gi);
        else run_single(id);
      }
    }
    // A node outside any group, its inputs ready.
    void run_single(std::uint32_t id) {
      const auto& n = node(id);
      if (n.is_literal()) run_node(id);
      else account([&] { return n.op + " '" + n.name + "' -> " + value_type_string(id); }, [&] { run_node(id); });
      if (checking && !n.is_literal()) check_finite(id);
      record(id);
      release_inputs_of({id}, -1);
    }

    std::vector<runtime_tensor>* reusable = nullptr;  // the caller's output tensors

    slot& fresh(std::uint32_t id) {
      slot& v = values[id];
      if (reusable) {
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
      v.owner = self.pool_->acquire(v.type, v.extents);
      v.data = v.owner->bytes();
      v.ready = true;
      ++stats.materialised_values;
      return v;
    }
    runtime_array array_of(std::uint32_t id) const {
      const slot& v = values[id];
      return runtime_array{v.type, v.extents, const_cast<void*>(v.data)};
    }

    void run_node(std::uint32_t id) {
      const auto& n = node(id);
      const node_attributes attrs(n);
      if (n.is_literal()) {
        slot& v = fresh(id);
        const attribute_value* a = n.attribute("value");
        visit_dtype(v.type, [&](auto t) {
          using T = decltype(t);
          T x{};
          if (a && std::holds_alternative<bool>(*a)) x = T(std::get<bool>(*a));
          else if (a && std::holds_alternative<std::int64_t>(*a)) x = T(std::get<std::int64_t>(*a));
          else x = T(attrs.number("value"));
          *v.owner->template data<T>() = x;
        });
        --stats.materialised_values;  // a scalar, not a pass over memory
        return;
      }
      const runtime_op& op = *find_runtime_op(n.op);
      switch (op.kind) {
        case node_kind::reduction: {
          const auto mask = reduced_mask(id);
          slot& v = fresh(id);
          op.reduce(array_of(n.inputs[0]), mask, array_of(id));
          (void)v;
          break;
        }
        case node_kind::view: {
          const slot& in = values[n.inputs[0]];
          const auto l = op.view(attrs, runtime_layout::contiguous(in.extents), who(id));
          slot& v = values[id];
          const std::size_t esize = dtype_size(v.type);
          if (runtime_detail::is_contiguous(l)) {
            v.owner = in.owner;  // shares the operand's storage
            v.data = static_cast<const char*>(in.data) + l.offset * esize;
            v.ready = true;
          } else {
            fresh(id);
            runtime_detail::copy_strided(static_cast<const char*>(in.data), l, static_cast<char*>(const_cast<void*>(v.data)), esize);
          }
          break;
        }
        default: {
          std::vector<runtime_array> in;
          for (auto i : n.inputs) in.push_back(array_of(i));
          fresh(id);
          op.kernel_run(attrs, array_of(id), in);
        }
      }
    }

    // One pass over the group's extents (fused_pass.hpp); stored members are written to their
    // storage, the others live in tile buffers or registers.
    // The values a group reads from outside it, each once.
    std::vector<std::uint32_t> group_externals(int gi) const {
      std::vector<std::uint32_t> externals;
      for (auto m : groups[gi].members)
        for (auto i : node(m).inputs)
          if (group_of[i] != gi && std::find(externals.begin(), externals.end(), i) == externals.end())
            externals.push_back(i);
      return externals;
    }
    // Runs a group whose external inputs are ready (ensure).
    void run_group(int gi) {
      group& gr = groups[gi];
      const auto& members = gr.members;
      const std::vector<std::uint32_t> externals = group_externals(gi);

      std::vector<bool> stored(members.size());
      for (std::size_t k = 0; k < members.size(); ++k) {
        stored[k] = uses[members[k]] > 0;
        if (stored[k]) fresh(members[k]);
      }
      ++stats.fused_groups;
      stats.fused_nodes += members.size();

      std::vector<fused_pass_input> inputs;
      for (auto x : externals) inputs.push_back({values[x].data, values[x].type, values[x].extents});
      std::vector<fused_pass_member> program;
      for (std::size_t k = 0; k < members.size(); ++k) {
        const graph_node& n = node(members[k]);
        fused_pass_member m{*kernels[members[k]], n.op, {}, values[members[k]].type,
                            stored[k] ? const_cast<void*>(values[members[k]].data) : nullptr};
        for (auto i : n.inputs)
          m.operands.push_back(group_of[i] == gi
                                   ? externals.size() + std::size_t(std::find(members.begin(), members.end(), i) - members.begin())
                                   : std::size_t(std::find(externals.begin(), externals.end(), i) - externals.begin()));
        program.push_back(std::move(m));
      }
      fused_pass pass(std::move(inputs), std::move(program), gr.extents, self.options_, checking);
      if (pass.native()) ++stats.native_passes;
      bool nonfinite = false;
      account(
          [&] {
            std::string ops;
            for (auto m : members) ops += (ops.empty() ? "" : ", ") + node(m).op + " '" + node(m).name + "'";
            return "fused pass [" + ops + "] over " + std::string(dtype_name(values[members.back()].type)) +
                   format_extents(gr.extents) + ", tile " + std::to_string(pass.tile()) +
                   (pass.native() ? ", generated code" : "");
          },
          [&] { nonfinite = pass.run(); });
      if (nonfinite) {
        if (members.size() == 1) throw nonfinite_error(members[0]);
        localise();
      }
      for (std::size_t k = 0; k < members.size(); ++k) {
        values[members[k]].ready = true;
        if (stored[k]) record(members[k]);
      }
      release_inputs_of(members, gi);
    }

    // A value with NaN or infinities: in a fused run, re-run node by node to find the node that
    // produced it first; node by node, that is this one.
    void check_finite(std::uint32_t id) {
      const slot& v = values[id];
      if (all_finite(v.type, v.data, element_count(v.extents))) return;
      if (self.options_.fuse) localise();
      throw nonfinite_error(id);
    }
    [[noreturn]] void localise() const {
      interpreter_options unfused = self.options_;
      unfused.fuse = false;
      unfused.check_numerics = true;
      if (bound) {
        std::vector<runtime_tensor> ignored;
        interpreter(g, unfused).run_bound(ignored, *bound);
      } else {
        interpreter(g, unfused).run(feeds, store);
      }
      throw numerics_error("interpreter", "?", "", dtype::f32, {}, {}, {},
                           "a fused pass produced NaN or infinities that a node-by-node run does not");
    }
    numerics_error nonfinite_error(std::uint32_t id) const {
      const auto& n = node(id);
      const slot& v = values[id];
      std::vector<numerics_error::operand> operands;
      for (auto i : n.inputs) {
        const slot& x = values[i];
        std::string d = is_node(i) ? node(i).op + " '" + node(i).name + "'" : "value " + std::to_string(i);
        if (!is_node(i)) d = g.describe_value(i);
        operands.push_back({d + " " + std::string(dtype_name(x.type)) + format_extents(x.extents),
                            health_of(x.type, x.data, element_count(x.extents))});
      }
      return numerics_error(n.op, n.name, n.where.line ? n.where.file + ":" + std::to_string(n.where.line) : "", v.type,
                            v.extents, health_of(v.type, v.data, element_count(v.extents)), std::move(operands));
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
  };

  graph graph_;
  interpreter_options options_;
  std::shared_ptr<const graph_structure> structure_;  // plan_cache.hpp's key
  // Intermediates' storage, kept between runs (buffer_pool.hpp); shared by copies of the interpreter.
  std::shared_ptr<runtime_detail::buffer_pool> pool_ = std::make_shared<runtime_detail::buffer_pool>();
  mutable interpreter_stats stats_;
  mutable value_trace trace_;
  mutable interpreter_profile profile_;
};

// Evaluates a graph once: interpreter(g).run(feeds, store).
inline std::vector<runtime_tensor> run_graph(const graph& g, const runtime_feeds& feeds, const params* store = nullptr) {
  return interpreter(g).run(feeds, store);
}

}  // namespace symflow
