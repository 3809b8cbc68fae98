#pragma once
// What a graph runner (graph_runner.hpp) is set up with and what it reports: its NVRTC options, the
// counters of its last run, and the architecture its kernels are compiled for, which the options
// choose (or the current device, when they leave it open).
#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "../runtime.hpp"
#include "compiler.hpp"

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

namespace nvrtc_detail {

// The architecture kernels are compiled for (options.arch, or chosen as described there).
inline std::string target_arch(const nvrtc_options& options) {
  if (!options.arch.empty()) return options.arch;
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

}  // namespace nvrtc_detail
}  // namespace symflow::cuda
