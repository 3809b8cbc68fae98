#pragma once
// The host side of the placement log: with SYMFLOW_PLACEMENT_LOG=1 in the environment, or after
// set_placement_log(true), every distinct unit of work an evaluation runs on the CPU prints one line
// to stderr, once per process: where it ran (cpu), what it is (a fused pass and its ops by scoped
// name, or a kernel), the extents and the thread count. The CUDA backend's log
// (symflow/cuda/placement_log.hpp) prints its kernels through this one (same switch, same lines).
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

namespace symflow {

namespace detail {
struct host_placement_log_state {
  std::atomic<int> enabled{[] {
    const char* v = std::getenv("SYMFLOW_PLACEMENT_LOG");
    return v && *v && std::strcmp(v, "0") != 0 ? 1 : 0;
  }()};
  std::mutex mutex;
  std::set<std::string> printed;
  std::FILE* sink = stderr;
};
inline host_placement_log_state& host_placement_log() {
  static host_placement_log_state state;
  return state;
}
}  // namespace detail

inline bool host_placement_log_enabled() {
  return detail::host_placement_log().enabled.load(std::memory_order_relaxed) != 0;
}
inline void set_host_placement_log(bool on) { detail::host_placement_log().enabled.store(on ? 1 : 0); }
// Where lines go (stderr by default); tests point it at a temporary file.
inline void set_host_placement_log_sink(std::FILE* sink) { detail::host_placement_log().sink = sink; }
inline void reset_host_placement_log() {
  auto& s = detail::host_placement_log();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.printed.clear();
}

// Prints "symflow placement: <line>" unless the same line was printed before.
inline void log_host_placement(const std::string& line) {
  auto& s = detail::host_placement_log();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.printed.insert(line).second) return;
  std::fprintf(s.sink, "symflow placement: %s\n", line.c_str());
  std::fflush(s.sink);
}

}  // namespace symflow
