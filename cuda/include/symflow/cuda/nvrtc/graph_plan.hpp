#pragma once
// Planning a run of a graph value on the GPU (graph_runner.hpp), from its leaves' dtypes and extents
// alone: every value's type, the fusion groups, which reductions and views the generated kernels take
// over, which values are stored, and the schedule of units (a generated kernel with its source, or a
// node run outside them) in the interpreter's demand order. A plan depends on nothing but the graph,
// the leaf types and the options, so the runner caches it per feed dtypes and extents (plan_key).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <symflow/ir/graph.hpp>
#include <symflow/runtime/op_table.hpp>
#include <symflow/runtime/plan.hpp>
#include <symflow/runtime/strided_copy.hpp>
#include <symflow/ir/value.hpp>

#include "codegen.hpp"
#include "compiler.hpp"
#include "graph_values.hpp"
#include "runner_options.hpp"

namespace symflow::cuda::nvrtc_detail {

// Values are numbered as in the interpreter: inputs, parameters, constants, then the nodes.
inline const graph_node& node_of(const symflow::graph& g, std::uint32_t id) { return g.nodes[id - g.first_node_id()]; }

// One entry of a plan's schedule.
struct run_unit {
  int kernel = -1;         // a generated kernel (graph_plan::kernels), or
  std::uint32_t node = 0;  // a node run outside them (a device kernel op, or on the host)
};

// What a run does, in order, and the types and layouts it needs.
struct graph_plan {
  value_types types;
  fusion_plan groups;
  std::vector<bool> stored;
  std::vector<generated_kernel> kernels;  // in launch order
  std::vector<run_unit> schedule;
  view_reads views;                       // every view node: its operand and layout there
  std::size_t views_folded = 0;
};

// A plan ready to run: the compiled program of each kernel, the values each unit reads, the
// number of readers of each value. Cached per feed dtypes and extents (and device).
struct prepared_plan : graph_plan {
  std::vector<std::shared_ptr<compiled_program>> programs;  // per kernel (null: nothing to launch)
  std::vector<std::vector<std::uint32_t>> reads;             // per schedule entry
  std::vector<std::size_t> readers;                          // per value
};

// A fed leaf against the type the graph declares for it (unknown extents match any).
inline void check_leaf(const char* what, const graph_leaf& leaf, dtype type, const runtime_extents& e) {
  bool ok = type == leaf.type.type && e.size() == leaf.type.shape.size();
  for (std::size_t i = 0; ok && i < e.size(); ++i) ok = leaf.type.shape[i] < 0 || std::size_t(leaf.type.shape[i]) == e[i];
  if (!ok)
    throw shape_error(std::string("graph_runner: ") + what + " '" + leaf.name + "' is " + std::string(dtype_name(type)) +
                      format_extents(e) + ", the graph expects " + graph_type_string(leaf.type));
}

// Leaf types (from specs or embedded values) -> node types, groups, stored members, schedule, sources.
inline graph_plan make_plan(const symflow::graph& g, const input_specs& specs, const nvrtc_options& options,
                            const std::filesystem::path& include_dir) {
  graph_plan p;
  p.types = value_types(g.value_count());
  std::uint32_t id = 0;
  for (const auto& in : g.inputs) {
    auto it = specs.find(in.name);
    if (it == specs.end()) throw value_error("graph_runner: no feed for input '" + in.name + "'");
    check_leaf("input", in, it->second.type, it->second.extents);
    p.types.type[id] = it->second.type;
    p.types.extents[id++] = it->second.extents;
  }
  for (const auto& par : g.parameters) {
    if (auto it = specs.find(par.name); it != specs.end()) {
      check_leaf("parameter", par, it->second.type, it->second.extents);
      p.types.type[id] = it->second.type;
      p.types.extents[id++] = it->second.extents;
    } else if (par.value) {
      p.types.type[id] = par.value->type;
      p.types.extents[id++] = runtime_extents(par.value->extents.begin(), par.value->extents.end());
    } else {
      throw value_error("graph_runner: no value for parameter '" + par.name +
                        "' (neither fed nor embedded in the graph)");
    }
  }
  for (const auto& c : g.constants) {
    p.types.type[id] = c.data.type;
    p.types.extents[id++] = runtime_extents(c.data.extents.begin(), c.data.extents.end());
  }
  infer_node_types(g, p.types);
  p.groups = plan_fusion_groups(g, p.types, options.fuse);
  // Reductions computed in generated kernels: those over trailing axes (rows, or all axes) of a
  // non-bool operand. One whose operand is computed by a fusion group is fused into that group's
  // kernel (the first such reduction per group; not with fuse = false): the operand is then not
  // stored unless something else reads it.
  std::vector<std::optional<reduction_part>> reduction(g.value_count());
  std::vector<std::int64_t> absorbed_by(p.groups.groups.size(), -1);
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const auto nid = std::uint32_t(g.first_node_id() + k);
    const graph_node& n = g.nodes[k];
    if (n.is_literal() || find_runtime_op(n.op)->kind != node_kind::reduction || n.inputs.size() != 1) continue;
    const std::uint32_t x = n.inputs[0];
    if (p.types.type[x] == dtype::boolean) continue;  // refused by the runtime form, on the host
    auto r = trailing_reduction(p.types.extents[x], reduced_axes_mask(describe_node(n), node_attributes(n), p.types.extents[x].size()));
    if (!r) continue;
    r->node = nid;
    r->operand = x;
    reduction[nid] = r;
    const int gi = p.groups.group_of[x];
    if (options.fuse && gi >= 0 && absorbed_by[std::size_t(gi)] < 0) absorbed_by[std::size_t(gi)] = nid;
  }
  // Stored: members read by a node outside their group (but for the reduction fused into the
  // group), and outputs.
  p.stored.assign(g.value_count(), false);
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const auto nid = std::uint32_t(g.first_node_id() + k);
    for (auto i : g.nodes[k].inputs) {
      const int gi = p.groups.group_of[i];
      if (gi >= 0 && absorbed_by[std::size_t(gi)] == std::int64_t(nid)) continue;
      if (p.groups.group_of[nid] < 0 || gi != p.groups.group_of[nid]) p.stored[i] = true;
    }
  }
  for (auto o : g.outputs) p.stored[o] = true;
  // Views: kernels read a view through its layout in its operand's memory (the view op's runtime
  // form, applied to that operand's contiguous layout as in the interpreter). A view is
  // materialised only when it is returned or read by another kind of node (a kernel op, a host
  // node, another view): as an alias of its operand's memory when the layout is contiguous (as the
  // interpreter does), else by a generated strided copy.
  std::vector<bool> materialise(g.value_count(), false);
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const auto nid = std::uint32_t(g.first_node_id() + k);
    const graph_node& n = g.nodes[k];
    if (n.is_literal()) continue;
    const runtime_op& op = *find_runtime_op(n.op);
    if (op.kind == node_kind::view) {
      const std::uint32_t x = n.inputs.at(0);
      p.views[nid] = view_read{x, op.view(node_attributes(n), runtime_layout::contiguous(p.types.extents[x]), describe_node(n))};
    }
    const bool kernel_reader = p.groups.group_of[nid] >= 0 || reduction[nid].has_value();
    if (!kernel_reader)
      for (auto i : n.inputs) materialise[i] = true;
  }
  for (auto o : g.outputs) materialise[o] = true;
  // Schedule: what the outputs need, operands first (the interpreter's demand order).
  std::vector<bool> done(g.value_count(), false);
  std::fill(done.begin(), done.begin() + std::ptrdiff_t(g.first_node_id()), true);
  std::vector<bool> group_done(p.groups.groups.size(), false);
  const std::string target = target_arch(options);
  const unsigned block = options.block_size ? options.block_size : 256;
  const auto add_kernel = [&](generated_kernel k) {
    p.schedule.push_back(run_unit{int(p.kernels.size()), 0});
    p.kernels.push_back(std::move(k));
  };
  auto visit = [&](auto&& self, std::uint32_t v) -> void {
    if (done[v]) return;
    const int gi = p.groups.group_of[v];
    if (gi >= 0) {
      if (group_done[std::size_t(gi)]) return;
      group_done[std::size_t(gi)] = true;
      for (auto m : p.groups.groups[std::size_t(gi)].members)
        for (auto i : node_of(g, m).inputs)
          if (p.groups.group_of[i] != gi && !(i >= g.first_node_id() && node_of(g, i).is_literal())) self(self, i);
      for (auto m : p.groups.groups[std::size_t(gi)].members) done[m] = true;
      std::optional<reduction_part> r;
      if (absorbed_by[std::size_t(gi)] >= 0) {
        r = reduction[std::size_t(absorbed_by[std::size_t(gi)])];
        done[r->node] = true;
      }
      add_kernel(generate_kernel(g, p.types, p.groups, gi, p.stored, include_dir, target, r, block, p.views));
      return;
    }
    for (auto i : node_of(g, v).inputs) self(self, i);
    if (done[v]) return;  // a reduction computed with its operand's group
    done[v] = true;
    if (reduction[v]) {
      add_kernel(generate_kernel(g, p.types, p.groups, -1, p.stored, include_dir, target, reduction[v], block, p.views));
    } else if (const auto view = p.views.find(v); view != p.views.end()) {
      if (!materialise[v]) ++p.views_folded;
      else if (runtime_detail::is_contiguous(view->second.layout)) p.schedule.push_back(run_unit{-1, v});  // an alias
      else add_kernel(generate_kernel(g, p.types, p.groups, -1, p.stored, include_dir, target, {}, block, p.views, v));
    } else {
      p.schedule.push_back(run_unit{-1, v});
    }
  };
  for (auto o : g.outputs) visit(visit, o);
  return p;
}

// The cache key of a run: the device, and each input's and fed parameter's dtype and extents.
inline std::string plan_key(const symflow::graph& g, const graph_feeds& feeds) {
  std::string k;
  const auto add = [&](std::uint64_t v) { k.append(reinterpret_cast<const char*>(&v), sizeof v); };
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();  // no device: clear the error (kernels compile for compute_90 there)
    dev = -1;
  }
  add(std::uint64_t(std::int64_t(dev)));
  const auto add_leaf = [&](const std::string& name) {
    auto it = feeds.find(name);
    if (it == feeds.end()) return add(~std::uint64_t(0));
    const auto e = it->second.extents();
    add(std::uint64_t(it->second.type()) << 32 | e.size());
    for (auto x : e) add(x);
  };
  for (const auto& in : g.inputs) add_leaf(in.name);
  for (const auto& par : g.parameters) add_leaf(par.name);
  return k;
}

// Whether a kernel has work: elements to compute, or (a reduction) results to write.
inline bool launches(const generated_kernel& k) { return k.reduction ? k.reduction->rows > 0 : k.elements > 0; }

// The plan for these feeds' dtypes and extents, with every kernel compiled (through the kernel cache)
// and the readers of each value counted.
inline std::unique_ptr<prepared_plan> prepare_plan(const symflow::graph& g, const graph_feeds& feeds,
                                                   const nvrtc_options& options,
                                                   const std::filesystem::path& include_dir) {
  input_specs specs;
  for (const auto& [name, f] : feeds) specs.insert_or_assign(name, value_spec{f.type(), f.extents()});
  auto p = std::make_unique<prepared_plan>();
  static_cast<graph_plan&>(*p) = make_plan(g, specs, options, include_dir);
  p->programs.resize(p->kernels.size());
  for (std::size_t ki = 0; ki < p->kernels.size(); ++ki)
    if (launches(p->kernels[ki])) p->programs[ki] = kernel_cache::global().get(p->kernels[ki].program, options.cache_dir);
  p->readers.assign(g.value_count(), 0);
  for (const auto& u : p->schedule) {
    std::vector<std::uint32_t> in;
    const auto add = [&](std::uint32_t i) {
      if (std::find(in.begin(), in.end(), i) == in.end()) in.push_back(i);
    };
    if (u.kernel < 0) {
      for (auto i : node_of(g, u.node).inputs) add(i);
    } else {
      const auto& k = p->kernels[std::size_t(u.kernel)];
      for (std::size_t x = 0; x < k.externals.size(); ++x)
        if (k.access[x] != operand_access::literal) add(k.sources[x]);
    }
    for (auto i : in) ++p->readers[i];
    p->reads.push_back(std::move(in));
  }
  for (auto o : g.outputs) ++p->readers[o];
  return p;
}

}  // namespace symflow::cuda::nvrtc_detail
