#pragma once
// The placement log: with SYMFLOW_PLACEMENT_LOG=1 in the environment, or after
// cuda::set_placement_log(true), every distinct kernel an evaluation launches prints one line to
// stderr, once per process: which kernel, its launch shape, the device, and the fusion group it
// runs (ops by scoped name, leaves by name, values computed by other kernels in brackets).
// Descriptions are built on the host from the symbolic nodes, and only while the log is on: the
// evaluator types that reach device code stay name-free, and a run with the log off formats nothing.
#include <cuda_runtime.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

#include "runtime.hpp"

namespace symflow::cuda {

namespace detail {
struct placement_log_state {
  std::atomic<int> enabled{-1};  // -1: the environment has not been read yet
  std::mutex mutex;
  std::set<std::string> printed;
};
inline placement_log_state& placement_log() {
  static placement_log_state state;
  return state;
}
inline bool environment_asks_for_placement_log() {
  const char* v = std::getenv("SYMFLOW_PLACEMENT_LOG");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}
}  // namespace detail

// Turns the log on or off for the whole process (overrides SYMFLOW_PLACEMENT_LOG).
inline void set_placement_log(bool on) { detail::placement_log().enabled.store(on ? 1 : 0); }

inline bool placement_log_enabled() {
  auto& state = detail::placement_log();
  int v = state.enabled.load(std::memory_order_relaxed);
  if (v < 0) {
    v = detail::environment_asks_for_placement_log() ? 1 : 0;
    int expected = -1;
    state.enabled.compare_exchange_strong(expected, v);
    v = state.enabled.load();
  }
  return v == 1;
}

// Forgets which kernels were printed, so that each prints again once (tests, or a new phase of a
// program).
inline void reset_placement_log() {
  auto& state = detail::placement_log();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.printed.clear();
}

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
  if (!placement_log_enabled()) return;
  std::string line = std::string("symflow placement: ") + describe();
  auto& state = placement_log();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (!state.printed.insert(line).second) return;
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

}  // namespace detail
}  // namespace symflow::cuda
