#pragma once
// The placement log: with SYMFLOW_PLACEMENT_LOG=1 in the environment, or after
// cuda::set_placement_log(true), every distinct kernel an evaluation launches prints one line to
// stderr, once per process: which kernel, its launch shape, the device, and the fusion group it
// runs (ops by scoped name, leaves by name, values computed by other kernels in brackets).
// Descriptions are built on the host from the symbolic nodes, and only while the log is on: the
// evaluator types that reach device code stay name-free, and a run with the log off formats nothing.
#include <cuda_runtime.h>

#include <string>

#include <symflow/eval/placement_log.hpp>

#include "runtime.hpp"

namespace symflow::cuda {

// One switch, one printed-set and one sink with the CPU's log (eval/placement_log.hpp): a line is
// printed once per process whichever backend placed the work.
inline void set_placement_log(bool on) { set_host_placement_log(on); }
inline bool placement_log_enabled() { return host_placement_log_enabled(); }
// Forgets which kernels were printed, so that each prints again once (tests, or a new phase of a
// program).
inline void reset_placement_log() { reset_host_placement_log(); }

namespace detail {

// "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs), device 0", cached per device: the log runs on every
// launch while it is on.
inline const std::string& current_device_name() {
  static thread_local int cached_device = -1;
  static thread_local std::string cached;
  int dev = 0;
  SYMFLOW_CUDA_CHECK(cudaGetDevice(&dev));
  if (dev != cached_device) {
    cached = device_description() + ", device " + std::to_string(dev);
    cached_device = dev;
  }
  return cached;
}

inline std::string launch_shape(dim3 grid, dim3 block) {
  std::string s = "grid " + std::to_string(grid.x);
  if (grid.y != 1 || grid.z != 1) (s += 'x') += std::to_string(grid.y);
  if (grid.z != 1) (s += 'x') += std::to_string(grid.z);
  return (s += ", block ") += std::to_string(block.x);
}

// Prints `line` unless an identical line was printed before. `describe` builds the line and runs
// only when the log is on.
template <class Describe>
void place(Describe&& describe) {
  if (placement_log_enabled()) log_host_placement(describe());
}

}  // namespace detail
}  // namespace symflow::cuda
