#pragma once
// The steps of a run of a plan (graph_plan.hpp): a generated kernel launched with its arguments in
// the generated signature's order, a kernel op run on the device (graph_device_kernel: matmul on
// cuBLAS), or a node run on the host through its runtime form on copies of its operands. Each step
// writes the values it computes into the run's slots and counts itself in the run's stats.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <symflow/ir/graph.hpp>
#include <symflow/ir/op_registry.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <symflow/runtime/op_table.hpp>
#include <symflow/ir/value.hpp>

#include "codegen.hpp"
#include "compiler.hpp"
#include "device_kernels.hpp"
#include "graph_plan.hpp"
#include "graph_values.hpp"
#include "runner_options.hpp"

namespace symflow::cuda::nvrtc_detail {

// A value during a run: where it is in device memory, and the memory it owns.
struct value_slot {
  const void* ptr = nullptr;
  std::optional<device_array> owned;  // (an alias: its operand's memory, which ptr points into)
  bool alias = false;
};

// Generated kernel `ki` of the plan: the memory of what it stores, its arguments, its launch.
inline void run_kernel(const prepared_plan& p, std::size_t ki, std::vector<value_slot>& values, const nvrtc_options& options,
                       graph_runner_stats& stats) {
  const generated_kernel& k = p.kernels[ki];
  for (auto m : k.stored) {
    values[m].owned = device_array(p.types.type[m], p.types.extents[m]);
    values[m].ptr = values[m].owned->data();
  }
  if (k.reduction) {
    const std::uint32_t r = k.reduction->node;
    values[r].owned = device_array(p.types.type[r], p.types.extents[r]);
    values[r].ptr = values[r].owned->data();
    ++stats.device_reductions;
    if (!k.members.empty()) ++stats.fused_reductions;
  }
  stats.fused_nodes += k.members.size();
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
  if (k.copy_of()) ++stats.views_copied;
  if (k.reduction) pointers.push_back(values[k.reduction->node].ptr);
  std::vector<void*> args{frame.data(), &n};
  if (k.reduction) {
    args.push_back(&rows);
    args.push_back(&count);
  }
  for (auto& ptr : pointers) args.push_back(&ptr);
  // Elementwise: a grid-stride loop over the elements. Reduction: one block per row (grid-stride
  // over rows) of the smallest power of two >= the row's count threads, up to the kernel's block.
  unsigned block = options.block_size ? options.block_size : 256;
  if (k.reduction)
    for (block = k.block; block > 1 && block / 2 >= k.reduction->count;) block /= 2;
  const unsigned long long blocks = k.reduction ? std::min<unsigned long long>(k.reduction->rows, 1ull << 20)
                                                : std::min<unsigned long long>((k.elements + block - 1) / block, 1ull << 20);
  nvrtc_detail::check_cuda(
      cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(unsigned(blocks)), dim3(block), args.data(), 0, nullptr),
      "cudaLaunchKernel");
  nvrtc_detail::check_cuda(cudaGetLastError(), "launch of a generated kernel");
  ++stats.kernels_launched;
}

// A kernel op with a device implementation for this case (graph_device_kernel<Op>), run in place.
inline bool run_device_node(const symflow::graph& g, const graph_plan& p, std::uint32_t id, std::vector<value_slot>& values,
                            cublasHandle_t& cublas, graph_runner_stats& stats) {
  const graph_node& n = node_of(g, id);
  bool done = false;
  std::apply(
      [&](auto... entry) {
        (
            [&] {
              using E = decltype(entry);
              using Op = typename E::type;
              if constexpr (E::kind == node_kind::kernel && graph_device_kernel<Op>::available) {
                if (done || Op::name != n.op) return;
                if (!cublas) {
                  if (cublasCreate(&cublas) != CUBLAS_STATUS_SUCCESS) throw nvrtc_error("graph_runner: cublasCreate failed");
                }
                std::vector<runtime_extents> in;
                std::vector<const void*> ptr;
                for (auto i : n.inputs) {
                  in.push_back(p.types.extents[i]);
                  ptr.push_back(values[i].ptr);
                }
                device_array result(p.types.type[id], p.types.extents[id]);
                if (graph_device_kernel<Op>::run(cublas, p.types.type[id], in, ptr, p.types.extents[id], result.data())) {
                  values[id].owned = std::move(result);
                  values[id].ptr = values[id].owned->data();
                  done = true;
                }
              }
            }(),
            ...);
      },
      registered_ops{});
  if (done) ++stats.device_nodes;
  return done;
}

// A node outside the groups: on the device when it has a device implementation, else its runtime
// form on the host, on copies of its operands.
inline void run_host_node(const symflow::graph& g, const graph_plan& p, std::uint32_t id, std::vector<value_slot>& values,
                          cublasHandle_t& cublas, graph_runner_stats& stats) {
  if (const auto view = p.views.find(id); view != p.views.end()) {  // contiguous: an alias
    const value_slot& in = values[view->second.source];
    values[id].owned = in.owned;
    values[id].ptr = static_cast<const char*>(in.ptr) + view->second.layout.offset * dtype_size(p.types.type[id]);
    values[id].alias = true;
    ++stats.views_aliased;
    return;
  }
  if (run_device_node(g, p, id, values, cublas, stats)) return;
  const graph_node& n = node_of(g, id);
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
    visit_compute_dtype(type, [&](auto t) {
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
  ++stats.host_nodes;
}

}  // namespace symflow::cuda::nvrtc_detail
