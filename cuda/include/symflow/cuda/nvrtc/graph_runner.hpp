#pragma once
// Runs a graph value (ir/graph.hpp, e.g. loaded from a file) on the GPU: its elementwise fusion
// groups as kernels generated at run time (codegen.hpp) and compiled with NVRTC (compiler.hpp, cached
// by content hash), so a model saved by one program runs fused in another that was built without
// nvcc. Node types and fusion groups come from the same code as the CPU interpreter's
// (runtime/plan.hpp). Reductions over trailing axes (rows, all axes) are generated kernels too,
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
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <symflow/ir/graph.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <symflow/runtime/op_table.hpp>
#include <symflow/runtime/plan.hpp>
#include <symflow/ir/value.hpp>
#include <symflow/ir/validate.hpp>

#include "../device_tensor.hpp"
#include "../runtime.hpp"
#include "codegen.hpp"
#include "compiler.hpp"
#include "device_kernels.hpp"
#include "graph_plan.hpp"        // what a run does, made once per feed dtypes and extents
#include "graph_plan_steps.hpp"  // each unit of a run: a generated kernel, a device or host node
#include "graph_values.hpp"
#include "runner_options.hpp"    // nvrtc_options, graph_runner_stats

namespace symflow::cuda {

class graph_runner {
 public:
  explicit graph_runner(symflow::graph g, nvrtc_options o = {}) : graph_(std::move(g)), options_(std::move(o)) {
    validate(graph_, "graph_runner");
    if (has_storage_dtypes(graph_))
      throw graph_error("graph_runner: the graph holds values of storage dtypes (f16, bf16, the small and unsigned "
                        "integers), which the GPU runner does not take yet; run it with the CPU interpreter, or "
                        "cast them to f32, i32 or i64 before the graph");
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
    nvrtc_detail::graph_plan p = nvrtc_detail::make_plan(graph_, leaves, options_, include_dir_);
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
    const nvrtc_detail::prepared_plan& p = prepare(feeds);
    std::vector<nvrtc_detail::value_slot> values(graph_.value_count());
    bind_leaves(feeds, values);
    // Readers left per value (units, and outputs): an intermediate is freed after its last reader.
    std::vector<std::size_t> readers = p.readers;
    stats_.views_folded = p.views_folded;
    for (std::size_t u = 0; u < p.schedule.size(); ++u) {
      const nvrtc_detail::run_unit& un = p.schedule[u];
      if (un.kernel >= 0) nvrtc_detail::run_kernel(p, std::size_t(un.kernel), values, options_, stats_);
      else nvrtc_detail::run_host_node(graph_, p, un.node, values, cublas_, stats_);
      for (auto i : p.reads[u])
        if (--readers[i] == 0 && i >= graph_.first_node_id()) values[i] = nvrtc_detail::value_slot{};
    }
    std::vector<device_array> out;
    for (auto id : graph_.outputs) {
      nvrtc_detail::value_slot& v = values[id];
      if (v.owned.has_value() && id >= graph_.first_node_id() && !v.alias) {
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
  std::string arch() const { return nvrtc_detail::target_arch(options_); }

 private:
  static constexpr std::size_t plan_cache_limit = 64;  // distinct feed shapes kept (then the cache restarts)

  // The plan for these feeds' dtypes and extents: from the plan cache, else made and kept.
  const nvrtc_detail::prepared_plan& prepare(const graph_feeds& feeds) const {
    const std::string key = nvrtc_detail::plan_key(graph_, feeds);
    if (auto it = plans_.find(key); it != plans_.end()) return *it->second;
    auto p = nvrtc_detail::prepare_plan(graph_, feeds, options_, include_dir_);
    if (plans_.size() >= plan_cache_limit) plans_.clear();
    ++plans_made_;
    stats_.planned = true;
    return *plans_.emplace(key, std::move(p)).first->second;
  }

  void bind_leaves(const graph_feeds& feeds, std::vector<nvrtc_detail::value_slot>& values) const {
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

  symflow::graph graph_;
  nvrtc_options options_;
  std::filesystem::path include_dir_;
  mutable std::mutex run_mutex_;
  mutable graph_runner_stats stats_;
  mutable std::map<std::pair<int, std::uint32_t>, device_array> resident_;
  mutable std::map<std::string, std::unique_ptr<nvrtc_detail::prepared_plan>> plans_;  // by plan_key
  mutable std::size_t plans_made_ = 0;
  mutable cublasHandle_t cublas_ = nullptr;
};

}  // namespace symflow::cuda
