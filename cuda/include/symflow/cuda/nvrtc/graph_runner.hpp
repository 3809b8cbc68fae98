#pragma once
// Runs a graph value (graph/graph.hpp, e.g. loaded from a file) on the GPU: its elementwise fusion
// groups as kernels generated at run time (codegen.hpp) and compiled with NVRTC (compiler.hpp, cached
// by content hash), so a model saved by one program runs fused in another that was built without
// nvcc. Node types and fusion groups come from the same code as the CPU interpreter's
// (graph/runtime/plan.hpp). Reductions over trailing axes (rows, all axes) are generated kernels too,
// fused with the group computing their operand; views are read through strides by the kernels
// consuming them (aliased or copied on the device where something else reads them); matmul with a
// 2-D right operand runs through cuBLAS. Other nodes (reductions over other axes, batched matmul,
// concat, ...) run on the host through their runtime forms (the interpreter's op table) on copies of
// their operands, and their results are uploaded. The whole plan (types, groups, sources, compiled
// programs) is cached per feed dtypes and extents: a repeated run only uploads and launches (see
// docs/cuda.md, "Graph values on the GPU (NVRTC)").
//
//   symflow::cuda::graph_runner r(load_graph_json_file("model.json"));
//   auto outs = r.run({{"x", runtime_tensor(x)}, {"w", device_array_or_device_tensor}});
//   runtime_tensor y = outs[0].to_host();
//   for (const auto& k : r.kernels({{"x", {dtype::f32, {64, 784}}}})) std::cout << k.program.source;
//
// Plain host C++ (no kernels of its own): usable from .cpp files. Link CUDA::nvrtc and CUDA::cudart.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <symflow/graph/graph.hpp>
#include <symflow/graph/runtime/interpreter.hpp>
#include <symflow/graph/runtime/op_table.hpp>
#include <symflow/graph/runtime/plan.hpp>
#include <symflow/graph/runtime/value.hpp>
#include <symflow/graph/validate.hpp>

#include "../device_tensor.hpp"
#include "../runtime.hpp"
#include "codegen.hpp"
#include "compiler.hpp"
#include "device_kernels.hpp"
#include "graph_values.hpp"

namespace symflow::cuda {

struct nvrtc_options {
  // NVRTC's target: "sm_90" (CUBIN for that GPU), "compute_90" (PTX, compiled for the device by the
  // driver when loaded). Empty: the current device's sm_XY when NVRTC supports it (else PTX for the
  // newest architecture it supports below), or compute_90 without a device.
  std::string arch;
  // On-disk cache of compiled images (<key>.ptx / <key>.cubin). Empty: $SYMFLOW_NVRTC_CACHE, or none.
  std::string cache_dir;
  // Directory holding symflow/core/config.hpp and symflow/ops/*.hpp. Empty: $SYMFLOW_INCLUDE_DIR, or
  // found next to these headers.
  std::string include_dir;
  bool fuse = true;           // false: every elementwise node is a kernel of its own
  unsigned block_size = 256;  // threads per block
};

struct graph_runner_stats {
  std::size_t kernels_launched = 0;  // generated kernels
  std::size_t host_nodes = 0;        // nodes run on the host (kernel ops, reductions over other axes)
  std::size_t device_nodes = 0;      // kernel ops run on the device (graph_device_kernel: matmul)
  std::size_t device_reductions = 0; // reductions computed in generated kernels
  std::size_t fused_reductions = 0;  // of those, reading the group that computes their operand
  std::size_t views_folded = 0;      // views only read through strides by the kernels consuming them
  std::size_t views_aliased = 0;     // contiguous views returned or read by other nodes: their operand's memory
  std::size_t views_copied = 0;      // other views returned or read by other nodes: a strided-copy kernel
  std::size_t fused_nodes = 0;       // elementwise nodes computed inside generated kernels
  bool planned = false;              // this run built its plan (false: the runner's plan cache had it)
};

class graph_runner {
 public:
  explicit graph_runner(symflow::graph g, nvrtc_options o = {}) : graph_(std::move(g)), options_(std::move(o)) {
    validate(graph_, "graph_runner");
    for (const auto& n : graph_.nodes)
      if (!n.is_literal() && !find_runtime_op(n.op))
        throw graph_error("graph_runner: node '" + n.name + "': no runtime form for op '" + n.op + "'");
    if (options_.cache_dir.empty())
      if (const char* env = std::getenv("SYMFLOW_NVRTC_CACHE"); env && *env) options_.cache_dir = env;
    include_dir_ = options_.include_dir.empty() ? nvrtc_detail::default_include_dir()
                                                : std::filesystem::path(options_.include_dir);
  }

  graph_runner(const graph_runner&) = delete;
  graph_runner& operator=(const graph_runner&) = delete;
  ~graph_runner() {
    if (cublas_) cublasDestroy(cublas_);
  }

  const symflow::graph& source() const noexcept { return graph_; }
  const nvrtc_options& options() const noexcept { return options_; }
  const graph_runner_stats& last_stats() const noexcept { return stats_; }

  // The kernels a run with leaves of these types launches, in launch order (sources, headers,
  // options; compiled by compile()). Parameters and constants default to their embedded values'
  // types. Needs no GPU.
  std::vector<generated_kernel> kernels(const input_specs& leaves) const {
    plan p = make_plan(leaves);
    std::vector<generated_kernel> out;
    for (const auto& u : p.schedule)
      if (u.kernel >= 0) out.push_back(std::move(p.kernels[std::size_t(u.kernel)]));
    return out;
  }

  // Those kernels compiled (through the cache: memory, then cache_dir, then NVRTC). Needs no GPU.
  std::vector<std::shared_ptr<compiled_program>> compile(const input_specs& leaves) const {
    std::vector<std::shared_ptr<compiled_program>> out;
    for (const auto& k : kernels(leaves)) out.push_back(kernel_cache::global().get(k.program, options_.cache_dir));
    return out;
  }

  // The graph's outputs for these feeds (inputs by name; a feed naming a parameter replaces its
  // embedded value), on the current device. Synchronous: returns when the results are in memory.
  std::vector<device_array> run(const graph_feeds& feeds) const {
    std::lock_guard lock(run_mutex_);
    stats_ = {};
    // The plan for these feeds' dtypes and extents: from the plan cache, else made (types, groups,
    // sources, compiled programs: bad feeds are refused before anything is uploaded) and kept.
    const prepared& p = prepare(feeds);
    std::vector<slot> values(value_count());
    bind_leaves(feeds, values);
    // Readers left per value (units, and outputs): an intermediate is freed after its last reader.
    std::vector<std::size_t> readers = p.readers;
    stats_.views_folded = p.views_folded;
    for (std::size_t u = 0; u < p.schedule.size(); ++u) {
      const unit& un = p.schedule[u];
      if (un.kernel >= 0) run_kernel(p, std::size_t(un.kernel), values);
      else run_host_node(p, un.node, values);
      for (auto i : p.reads[u])
        if (--readers[i] == 0 && i >= first_node()) values[i] = slot{};
    }
    std::vector<device_array> out;
    for (auto id : graph_.outputs) {
      slot& v = values[id];
      if (v.owned.has_value() && id >= first_node() && !v.alias) {
        out.push_back(*v.owned);
      } else {  // a leaf (a feed's memory, a resident parameter) or an alias: copied
        device_array d(p.types.type[id], p.types.extents[id]);
        if (d.byte_size())
          nvrtc_detail::check_cuda(cudaMemcpy(d.data(), v.ptr, d.byte_size(), cudaMemcpyDeviceToDevice), "cudaMemcpy");
        out.push_back(std::move(d));
      }
    }
    return out;
  }

  // Plans made by run() so far (a run whose feeds have the dtypes and extents of an earlier run's
  // reuses that run's plan: no planning, no source generation, no hashing; last_stats().planned).
  std::size_t plans_made() const {
    std::lock_guard lock(run_mutex_);
    return plans_made_;
  }

  std::vector<runtime_tensor> run_to_host(const graph_feeds& feeds) const {
    std::vector<runtime_tensor> out;
    for (const auto& d : run(feeds)) out.push_back(d.to_host());
    return out;
  }

  // The architecture kernels are compiled for (options().arch, or chosen as described there).
  std::string arch() const {
    if (!options_.arch.empty()) return options_.arch;
    if (!device_available()) return "compute_90";
    int dev = 0, major = 0, minor = 0;
    nvrtc_detail::check_cuda(cudaGetDevice(&dev), "cudaGetDevice");
    nvrtc_detail::check_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), "cudaDeviceGetAttribute");
    nvrtc_detail::check_cuda(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev), "cudaDeviceGetAttribute");
    const int want = major * 10 + minor;
    int count = 0;
    nvrtc_detail::check(nvrtcGetNumSupportedArchs(&count), "nvrtcGetNumSupportedArchs");
    std::vector<int> archs(std::size_t(std::max(count, 0)));
    if (count) nvrtc_detail::check(nvrtcGetSupportedArchs(archs.data()), "nvrtcGetSupportedArchs");
    if (std::find(archs.begin(), archs.end(), want) != archs.end()) return "sm_" + std::to_string(want);
    int best = 0;
    for (int a : archs)
      if (a <= want) best = std::max(best, a);
    if (!best) throw nvrtc_error("graph_runner: NVRTC supports no architecture up to sm_" + std::to_string(want));
    return "compute_" + std::to_string(best);
  }

 private:
  struct slot {
    const void* ptr = nullptr;
    std::optional<device_array> owned;  // (an alias: its operand's memory, which ptr points into)
    bool alias = false;
  };
  struct unit {
    int kernel = -1;         // a generated kernel (plan::kernels), or
    std::uint32_t node = 0;  // a node run outside them (a device kernel op, or on the host)
  };
  struct plan {
    value_types types;
    fusion_plan groups;
    std::vector<bool> stored;
    std::vector<generated_kernel> kernels;  // in launch order
    std::vector<unit> schedule;
    view_reads views;                       // every view node: its operand and layout there
    std::size_t views_folded = 0;
  };
  // A plan ready to run: the compiled program of each kernel, the values each unit reads, the
  // number of readers of each value. Cached per feed dtypes and extents (and device).
  struct prepared : plan {
    std::vector<std::shared_ptr<compiled_program>> programs;  // per kernel (null: nothing to launch)
    std::vector<std::vector<std::uint32_t>> reads;             // per schedule entry
    std::vector<std::size_t> readers;                          // per value
  };
  static constexpr std::size_t plan_cache_limit = 64;  // distinct feed shapes kept (then the cache restarts)

  std::size_t first_node() const { return graph_.inputs.size() + graph_.parameters.size() + graph_.constants.size(); }
  std::size_t value_count() const { return first_node() + graph_.nodes.size(); }
  const graph_node& node(std::uint32_t id) const { return graph_.nodes[id - first_node()]; }

  static void check_leaf(const char* what, const graph_leaf& leaf, dtype type, const runtime_extents& e) {
    bool ok = type == leaf.type.type && e.size() == leaf.type.shape.size();
    for (std::size_t i = 0; ok && i < e.size(); ++i) ok = leaf.type.shape[i] < 0 || std::size_t(leaf.type.shape[i]) == e[i];
    if (!ok)
      throw shape_error(std::string("graph_runner: ") + what + " '" + leaf.name + "' is " + std::string(dtype_name(type)) +
                        format_extents(e) + ", the graph expects " + graph_type_string(leaf.type));
  }

  // Leaf types (from specs or embedded values) -> node types, groups, stored members, schedule, sources.
  plan make_plan(const input_specs& specs) const {
    plan p;
    p.types = value_types(value_count());
    std::uint32_t id = 0;
    for (const auto& in : graph_.inputs) {
      auto it = specs.find(in.name);
      if (it == specs.end()) throw value_error("graph_runner: no feed for input '" + in.name + "'");
      check_leaf("input", in, it->second.type, it->second.extents);
      p.types.type[id] = it->second.type;
      p.types.extents[id++] = it->second.extents;
    }
    for (const auto& par : graph_.parameters) {
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
    for (const auto& c : graph_.constants) {
      p.types.type[id] = c.data.type;
      p.types.extents[id++] = runtime_extents(c.data.extents.begin(), c.data.extents.end());
    }
    infer_node_types(graph_, p.types);
    p.groups = plan_fusion_groups(graph_, p.types, options_.fuse);
    // Reductions computed in generated kernels: those over trailing axes (rows, or all axes) of a
    // non-bool operand. One whose operand is computed by a fusion group is fused into that group's
    // kernel (the first such reduction per group; not with fuse = false): the operand is then not
    // stored unless something else reads it.
    std::vector<std::optional<reduction_part>> reduction(value_count());
    std::vector<std::int64_t> absorbed_by(p.groups.groups.size(), -1);
    for (std::size_t k = 0; k < graph_.nodes.size(); ++k) {
      const auto nid = std::uint32_t(first_node() + k);
      const graph_node& n = graph_.nodes[k];
      if (n.is_literal() || find_runtime_op(n.op)->kind != node_kind::reduction || n.inputs.size() != 1) continue;
      const std::uint32_t x = n.inputs[0];
      if (p.types.type[x] == dtype::boolean) continue;  // refused by the runtime form, on the host
      auto r = trailing_reduction(p.types.extents[x], reduced_axes_mask(describe_node(n), node_attributes(n), p.types.extents[x].size()));
      if (!r) continue;
      r->node = nid;
      r->operand = x;
      reduction[nid] = r;
      const int gi = p.groups.group_of[x];
      if (options_.fuse && gi >= 0 && absorbed_by[std::size_t(gi)] < 0) absorbed_by[std::size_t(gi)] = nid;
    }
    // Stored: members read by a node outside their group (but for the reduction fused into the
    // group), and outputs.
    p.stored.assign(value_count(), false);
    for (std::size_t k = 0; k < graph_.nodes.size(); ++k) {
      const auto nid = std::uint32_t(first_node() + k);
      for (auto i : graph_.nodes[k].inputs) {
        const int gi = p.groups.group_of[i];
        if (gi >= 0 && absorbed_by[std::size_t(gi)] == std::int64_t(nid)) continue;
        if (p.groups.group_of[nid] < 0 || gi != p.groups.group_of[nid]) p.stored[i] = true;
      }
    }
    for (auto o : graph_.outputs) p.stored[o] = true;
    // Views: kernels read a view through its layout in its operand's memory (the view op's runtime
    // form, applied to that operand's contiguous layout as in the interpreter). A view is
    // materialised only when it is returned or read by another kind of node (a kernel op, a host
    // node, another view): as an alias of its operand's memory when the layout is contiguous (as the
    // interpreter does), else by a generated strided copy.
    std::vector<bool> materialise(value_count(), false);
    for (std::size_t k = 0; k < graph_.nodes.size(); ++k) {
      const auto nid = std::uint32_t(first_node() + k);
      const graph_node& n = graph_.nodes[k];
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
    for (auto o : graph_.outputs) materialise[o] = true;
    // Schedule: what the outputs need, operands first (the interpreter's demand order).
    std::vector<bool> done(value_count(), false);
    std::fill(done.begin(), done.begin() + std::ptrdiff_t(first_node()), true);
    std::vector<bool> group_done(p.groups.groups.size(), false);
    const std::string target = arch();
    const unsigned block = options_.block_size ? options_.block_size : 256;
    const auto add_kernel = [&](generated_kernel k) {
      p.schedule.push_back(unit{int(p.kernels.size()), 0});
      p.kernels.push_back(std::move(k));
    };
    auto visit = [&](auto&& self, std::uint32_t v) -> void {
      if (done[v]) return;
      const int gi = p.groups.group_of[v];
      if (gi >= 0) {
        if (group_done[std::size_t(gi)]) return;
        group_done[std::size_t(gi)] = true;
        for (auto m : p.groups.groups[std::size_t(gi)].members)
          for (auto i : node(m).inputs)
            if (p.groups.group_of[i] != gi && !(i >= first_node() && node(i).is_literal())) self(self, i);
        for (auto m : p.groups.groups[std::size_t(gi)].members) done[m] = true;
        std::optional<reduction_part> r;
        if (absorbed_by[std::size_t(gi)] >= 0) {
          r = reduction[std::size_t(absorbed_by[std::size_t(gi)])];
          done[r->node] = true;
        }
        add_kernel(generate_kernel(graph_, p.types, p.groups, gi, p.stored, include_dir_, target, r, block, p.views));
        return;
      }
      for (auto i : node(v).inputs) self(self, i);
      if (done[v]) return;  // a reduction computed with its operand's group
      done[v] = true;
      if (reduction[v]) {
        add_kernel(generate_kernel(graph_, p.types, p.groups, -1, p.stored, include_dir_, target, reduction[v], block, p.views));
      } else if (const auto view = p.views.find(v); view != p.views.end()) {
        if (!materialise[v]) ++p.views_folded;
        else if (runtime_detail::is_contiguous(view->second.layout)) p.schedule.push_back(unit{-1, v});  // an alias
        else add_kernel(generate_kernel(graph_, p.types, p.groups, -1, p.stored, include_dir_, target, {}, block, p.views, v));
      } else {
        p.schedule.push_back(unit{-1, v});
      }
    };
    for (auto o : graph_.outputs) visit(visit, o);
    return p;
  }

  // The cache key of a run: the device, and each input's and fed parameter's dtype and extents.
  std::string plan_key(const graph_feeds& feeds) const {
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
    for (const auto& in : graph_.inputs) add_leaf(in.name);
    for (const auto& par : graph_.parameters) add_leaf(par.name);
    return k;
  }

  const prepared& prepare(const graph_feeds& feeds) const {
    const std::string key = plan_key(feeds);
    if (auto it = plans_.find(key); it != plans_.end()) return *it->second;
    input_specs specs;
    for (const auto& [name, f] : feeds) specs.insert_or_assign(name, value_spec{f.type(), f.extents()});
    auto p = std::make_unique<prepared>();
    static_cast<plan&>(*p) = make_plan(specs);
    p->programs.resize(p->kernels.size());
    for (std::size_t ki = 0; ki < p->kernels.size(); ++ki)
      if (launches(p->kernels[ki])) p->programs[ki] = kernel_cache::global().get(p->kernels[ki].program, options_.cache_dir);
    p->readers.assign(value_count(), 0);
    for (const auto& u : p->schedule) {
      std::vector<std::uint32_t> in;
      const auto add = [&](std::uint32_t i) {
        if (std::find(in.begin(), in.end(), i) == in.end()) in.push_back(i);
      };
      if (u.kernel < 0) {
        for (auto i : node(u.node).inputs) add(i);
      } else {
        const auto& k = p->kernels[std::size_t(u.kernel)];
        for (std::size_t x = 0; x < k.externals.size(); ++x)
          if (k.access[x] != operand_access::literal) add(k.sources[x]);
      }
      for (auto i : in) ++p->readers[i];
      p->reads.push_back(std::move(in));
    }
    for (auto o : graph_.outputs) ++p->readers[o];
    if (plans_.size() >= plan_cache_limit) plans_.clear();
    ++plans_made_;
    stats_.planned = true;
    return *plans_.emplace(key, std::move(p)).first->second;
  }

  void bind_leaves(const graph_feeds& feeds, std::vector<slot>& values) const {
    std::uint32_t id = 0;
    auto bind_feed = [&](const graph_feed& f) {
      if (f.on_host()) {
        values[id].owned = device_array::from_host(f.host());
        values[id].ptr = values[id].owned->data();
      } else {
        values[id].ptr = f.device_pointer();
      }
    };
    for (const auto& in : graph_.inputs) {
      auto it = feeds.find(in.name);
      if (it == feeds.end()) throw value_error("graph_runner: no feed for input '" + in.name + "'");
      bind_feed(it->second);
      ++id;
    }
    for (const auto& par : graph_.parameters) {
      if (auto it = feeds.find(par.name); it != feeds.end()) {
        bind_feed(it->second);
      } else if (par.value) {
        const device_array& d = resident(id, *par.value);
        values[id].owned = d;
        values[id].ptr = d.data();
      }  // else: make_plan reports the missing value
      ++id;
    }
    for (const auto& c : graph_.constants) {
      const device_array& d = resident(id, c.data);
      values[id].owned = d;
      values[id].ptr = d.data();
      ++id;
    }
  }

  // Embedded parameters and constants, uploaded on first use and kept with the runner.
  const device_array& resident(std::uint32_t id, const graph_tensor& t) const {
    int dev = 0;
    nvrtc_detail::check_cuda(cudaGetDevice(&dev), "cudaGetDevice");
    auto it = resident_.find({dev, id});
    if (it == resident_.end()) it = resident_.emplace(std::pair{dev, id}, device_array::from_host(runtime_tensor(t))).first;
    return it->second;
  }

  // Whether a kernel has work: elements to compute, or (a reduction) results to write.
  static bool launches(const generated_kernel& k) { return k.reduction ? k.reduction->rows > 0 : k.elements > 0; }

  void run_kernel(const prepared& p, std::size_t ki, std::vector<slot>& values) const {
    const generated_kernel& k = p.kernels[ki];
    for (auto m : k.stored) {
      values[m].owned = device_array(p.types.type[m], p.types.extents[m]);
      values[m].ptr = values[m].owned->data();
    }
    if (k.reduction) {
      const std::uint32_t r = k.reduction->node;
      values[r].owned = device_array(p.types.type[r], p.types.extents[r]);
      values[r].ptr = values[r].owned->data();
      ++stats_.device_reductions;
      if (!k.members.empty()) ++stats_.fused_reductions;
    }
    stats_.fused_nodes += k.members.size();
    if (!launches(k)) return;
    const cudaKernel_t kernel = p.programs[ki]->kernel(generated_kernel::entry);
    // Arguments, in the generated signature's order: the frame (dims, then strides per external:
    // long long each), the element count, (a reduction's rows and count), the externals read from
    // memory, the stored members, (the reduction's result).
    const std::size_t R = k.frame.size(), nx = std::max<std::size_t>(k.externals.size(), 1);
    std::vector<long long> frame(R + nx * R, 0);
    for (std::size_t d = 0; d < R; ++d) frame[d] = (long long)k.frame[d];
    for (std::size_t x = 0; x < k.externals.size(); ++x)
      for (std::size_t d = 0; d < R; ++d) frame[R + x * R + d] = (long long)k.strides[x][d];
    long long n = (long long)k.elements;
    long long rows = k.reduction ? (long long)k.reduction->rows : 0, count = k.reduction ? (long long)k.reduction->count : 0;
    std::vector<const void*> pointers;
    for (std::size_t x = 0; x < k.externals.size(); ++x)
      if (k.access[x] != operand_access::literal)
        pointers.push_back(static_cast<const char*>(values[k.sources[x]].ptr) + k.offsets[x] * dtype_size(p.types.type[k.externals[x]]));
    for (auto m : k.stored) pointers.push_back(values[m].ptr);
    if (k.copy_of()) ++stats_.views_copied;
    if (k.reduction) pointers.push_back(values[k.reduction->node].ptr);
    std::vector<void*> args{frame.data(), &n};
    if (k.reduction) {
      args.push_back(&rows);
      args.push_back(&count);
    }
    for (auto& ptr : pointers) args.push_back(&ptr);
    // Elementwise: a grid-stride loop over the elements. Reduction: one block per row (grid-stride
    // over rows) of the smallest power of two >= the row's count threads, up to the kernel's block.
    unsigned block = options_.block_size ? options_.block_size : 256;
    if (k.reduction)
      for (block = k.block; block > 1 && block / 2 >= k.reduction->count;) block /= 2;
    const unsigned long long blocks = k.reduction ? std::min<unsigned long long>(k.reduction->rows, 1ull << 20)
                                                  : std::min<unsigned long long>((k.elements + block - 1) / block, 1ull << 20);
    nvrtc_detail::check_cuda(
        cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(unsigned(blocks)), dim3(block), args.data(), 0, nullptr),
        "cudaLaunchKernel");
    nvrtc_detail::check_cuda(cudaGetLastError(), "launch of a generated kernel");
    ++stats_.kernels_launched;
  }

  // A kernel op with a device implementation for this case (graph_device_kernel<Op>), run in place.
  bool run_device_node(const plan& p, std::uint32_t id, std::vector<slot>& values) const {
    const graph_node& n = node(id);
    bool done = false;
    std::apply(
        [&](auto... entry) {
          (
              [&] {
                using E = decltype(entry);
                using Op = typename E::type;
                if constexpr (E::kind == node_kind::kernel && graph_device_kernel<Op>::available) {
                  if (done || Op::name != n.op) return;
                  if (!cublas_) {
                    if (cublasCreate(&cublas_) != CUBLAS_STATUS_SUCCESS) throw nvrtc_error("graph_runner: cublasCreate failed");
                  }
                  std::vector<runtime_extents> in;
                  std::vector<const void*> ptr;
                  for (auto i : n.inputs) {
                    in.push_back(p.types.extents[i]);
                    ptr.push_back(values[i].ptr);
                  }
                  device_array result(p.types.type[id], p.types.extents[id]);
                  if (graph_device_kernel<Op>::run(cublas_, p.types.type[id], in, ptr, p.types.extents[id], result.data())) {
                    values[id].owned = std::move(result);
                    values[id].ptr = values[id].owned->data();
                    done = true;
                  }
                }
              }(),
              ...);
        },
        registered_ops{});
    if (done) ++stats_.device_nodes;
    return done;
  }

  // A node outside the groups: on the device when it has a device implementation, else its runtime
  // form on the host, on copies of its operands.
  void run_host_node(const plan& p, std::uint32_t id, std::vector<slot>& values) const {
    if (const auto view = p.views.find(id); view != p.views.end()) {  // contiguous: an alias
      const slot& in = values[view->second.source];
      values[id].owned = in.owned;
      values[id].ptr = static_cast<const char*>(in.ptr) + view->second.layout.offset * dtype_size(p.types.type[id]);
      values[id].alias = true;
      ++stats_.views_aliased;
      return;
    }
    if (run_device_node(p, id, values)) return;
    const graph_node& n = node(id);
    const dtype type = p.types.type[id];
    const runtime_extents& extents = p.types.extents[id];
    runtime_tensor result(type, extents);
    const node_attributes attrs(n);
    const auto download = [&](std::uint32_t i) {
      runtime_tensor h(p.types.type[i], p.types.extents[i]);
      if (h.byte_size())
        nvrtc_detail::check_cuda(cudaMemcpy(h.bytes(), values[i].ptr, h.byte_size(), cudaMemcpyDeviceToHost), "cudaMemcpy");
      return h;
    };
    const auto array = [](runtime_tensor& t) { return runtime_array{t.type(), t.extents(), t.bytes()}; };
    if (n.is_literal()) {
      const attribute_value* a = n.attribute("value");
      visit_dtype(type, [&](auto t) {
        using T = decltype(t);
        T x{};
        if (a && std::holds_alternative<bool>(*a)) x = T(std::get<bool>(*a));
        else if (a && std::holds_alternative<std::int64_t>(*a)) x = T(std::get<std::int64_t>(*a));
        else x = T(attrs.number("value"));
        *result.template data<T>() = x;
      });
    } else {
      const runtime_op& op = *find_runtime_op(n.op);
      const std::string who = describe_node(n);
      std::vector<runtime_tensor> in;
      for (auto i : n.inputs) in.push_back(download(i));
      switch (op.kind) {
        case node_kind::reduction:
          op.reduce(array(in[0]), reduced_axes_mask(who, attrs, in[0].extents().size()), array(result));
          break;
        case node_kind::view:           // unreachable: views are read through strides, aliased or copied
        case node_kind::elementwise: {  // unreachable: elementwise nodes are in groups
          std::vector<const void*> ptrs;
          for (auto& t : in) ptrs.push_back(t.bytes());
          p.types.kernel[id]->run(ptrs.data(), result.bytes(), result.size());
          break;
        }
        default: {
          std::vector<runtime_array> arrays;
          for (auto& t : in) arrays.push_back(array(t));
          op.kernel_run(attrs, array(result), arrays);
        }
      }
    }
    values[id].owned = device_array::from_host(result);
    values[id].ptr = values[id].owned->data();
    ++stats_.host_nodes;
  }

  symflow::graph graph_;
  nvrtc_options options_;
  std::filesystem::path include_dir_;
  mutable std::mutex run_mutex_;
  mutable graph_runner_stats stats_;
  mutable std::map<std::pair<int, std::uint32_t>, device_array> resident_;
  mutable std::map<std::string, std::unique_ptr<prepared>> plans_;  // by plan_key
  mutable std::size_t plans_made_ = 0;
  mutable cublasHandle_t cublas_ = nullptr;
};

}  // namespace symflow::cuda
