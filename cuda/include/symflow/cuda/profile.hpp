#pragma once
// The CUDA backend's per-kernel profile: with cuda::set_profiling(true) (or SYMFLOW_CUDA_PROFILE=1
// in the environment), every fusion group an evaluation launches (a map, a reduction with its
// finishing kernel, a one-pass group, a kernel op such as a cuBLAS GEMM) is bracketed by two CUDA
// events on its stream. cuda::profile() waits for the recorded events and returns the time of each
// group, aggregated over every launch since the last reset_profile(), under the group's description
// (the kernel and the fusion group's ops by scoped name, as the placement log writes them);
// slowest(n) prints the n slowest. Off, a launch costs one relaxed atomic load more.
// Host code only; descriptions are built on the host, and only while profiling is on.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "runtime.hpp"

namespace symflow::cuda {

// Where the GPU spent its time, one entry per fusion group (by description), in the order the groups
// were first seen. Mirrors symflow::interpreter_profile (the CPU interpreter's), with launch counts.
struct kernel_profile {
  struct entry {
    std::string description;  // "map_dense_kernel: dense1/relu(dense1/add([dense1/matmul], b1)) -> f32[256,1024]"
    std::size_t launches = 0;
    double seconds = 0;  // summed over the launches (CUDA events: the GPU's time from before to after)
  };
  std::vector<entry> entries;

  double total_seconds() const {
    double t = 0;
    for (const auto& e : entries) t += e.seconds;
    return t;
  }
  const entry* find(const std::string& description) const {
    for (const auto& e : entries)
      if (e.description == description) return &e;
    return nullptr;
  }
  // The `count` slowest groups: total time, share, launches, time per launch, description.
  std::string slowest(std::size_t count = 10) const {
    std::vector<entry> sorted = entries;
    std::stable_sort(sorted.begin(), sorted.end(), [](const entry& a, const entry& b) { return a.seconds > b.seconds; });
    const double total = total_seconds();
    std::string out;
    for (std::size_t i = 0; i < sorted.size() && i < count; ++i) {
      char line[96];
      std::snprintf(line, sizeof line, "%10.3f ms %5.1f%% %6zux %9.3f ms  ", sorted[i].seconds * 1e3,
                    total > 0 ? 100.0 * sorted[i].seconds / total : 0.0, sorted[i].launches,
                    sorted[i].launches ? sorted[i].seconds * 1e3 / double(sorted[i].launches) : 0.0);
      out += line + sorted[i].description + "\n";
    }
    return out;
  }
};

namespace detail {
struct profile_state {
  std::atomic<int> enabled{-1};  // -1: the environment has not been read yet
  std::mutex mutex;
  struct pending {
    std::size_t entry;
    cudaEvent_t start, stop;
  };
  std::vector<pending> recorded;  // events not yet read
  std::vector<cudaEvent_t> spare;  // read events, reused
  kernel_profile profile;
  std::map<std::string, std::size_t, std::less<>> index;  // description -> entry

  // Waits for every recorded event and adds the times to the profile (mutex held).
  void resolve() {
    for (const pending& p : recorded) {
      float ms = 0;
      if (cudaEventSynchronize(p.stop) == cudaSuccess && cudaEventElapsedTime(&ms, p.start, p.stop) == cudaSuccess) {
        if (p.entry < profile.entries.size()) profile.entries[p.entry].seconds += double(ms) * 1e-3;
      }
      else
        (void)cudaGetLastError();
      spare.push_back(p.start);
      spare.push_back(p.stop);
    }
    recorded.clear();
  }
};
inline profile_state& profile_data() {
  static profile_state state;
  return state;
}
}  // namespace detail

// Turns the profile on or off for the whole process (overrides SYMFLOW_CUDA_PROFILE).
inline void set_profiling(bool on) { detail::profile_data().enabled.store(on ? 1 : 0); }

inline bool profiling_enabled() {
  auto& state = detail::profile_data();
  int v = state.enabled.load(std::memory_order_relaxed);
  if (v < 0) {
    const char* e = std::getenv("SYMFLOW_CUDA_PROFILE");
    v = e != nullptr && *e != '\0' && std::string(e) != "0" ? 1 : 0;
    int expected = -1;
    state.enabled.compare_exchange_strong(expected, v);
    v = state.enabled.load();
  }
  return v == 1;
}

// Switches the profile on for a scope and restores the previous setting.
class profiling_scope {
 public:
  explicit profiling_scope(bool on = true) : saved_(profiling_enabled()) { set_profiling(on); }
  ~profiling_scope() { set_profiling(saved_); }
  profiling_scope(const profiling_scope&) = delete;
  profiling_scope& operator=(const profiling_scope&) = delete;

 private:
  bool saved_;
};

// Every group timed since the last reset (waits for the GPU to reach the last recorded event).
inline kernel_profile profile() {
  auto& state = detail::profile_data();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.resolve();
  return state.profile;
}

// Forgets the times recorded so far (waits for pending events first).
inline void reset_profile() {
  auto& state = detail::profile_data();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.resolve();
  state.profile.entries.clear();
  state.index.clear();
}

namespace detail {

// Brackets one fusion group's launches with two events when profiling is on (and the stream is not
// being captured into a CUDA graph, where events cannot be timed). `describe` runs only then. A
// group that computes another inside it (a matmul materialising its fused operand first) pauses
// while the inner one runs, so no time is counted twice.
class profile_region {
 public:
  template <class Describe>
  profile_region(cudaStream_t s, Describe&& describe) {
    if (!profiling_enabled()) return;
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(s, &capture) != cudaSuccess) {
      (void)cudaGetLastError();
      return;
    }
    if (capture != cudaStreamCaptureStatusNone) return;
    std::string text = describe();
    auto& state = profile_data();
    std::lock_guard<std::mutex> lock(state.mutex);
    auto it = state.index.find(text);
    if (it == state.index.end()) {
      it = state.index.emplace(text, state.profile.entries.size()).first;
      state.profile.entries.push_back({std::move(text), 0, 0});
    }
    entry_ = it->second;
    stream_ = s;
    if (innermost() != nullptr) innermost()->end_segment(state);
    outer_ = innermost();
    innermost() = this;
    active_ = true;
    begin_segment(state);
  }
  profile_region(const profile_region&) = delete;
  profile_region& operator=(const profile_region&) = delete;
  ~profile_region() {
    if (!active_) return;
    auto& state = profile_data();
    std::lock_guard<std::mutex> lock(state.mutex);
    end_segment(state);
    if (entry_ < state.profile.entries.size()) ++state.profile.entries[entry_].launches;
    innermost() = outer_;
    if (outer_ != nullptr) outer_->begin_segment(state);
    if (state.recorded.size() >= 4096) state.resolve();  // bounded, at the price of a wait
  }

 private:
  static profile_region*& innermost() {
    static thread_local profile_region* region = nullptr;
    return region;
  }
  // (mutex held) Errors are swallowed: a destructor must not throw, and a lost segment only
  // makes the profile short.
  void begin_segment(profile_state& state) {
    start_ = nullptr;
    cudaEvent_t e = nullptr;
    if (!state.spare.empty()) {
      e = state.spare.back();
      state.spare.pop_back();
    } else if (cudaEventCreate(&e) != cudaSuccess) {
      (void)cudaGetLastError();
      return;
    }
    if (cudaEventRecord(e, stream_) != cudaSuccess) {
      (void)cudaGetLastError();
      state.spare.push_back(e);
      return;
    }
    start_ = e;
  }
  void end_segment(profile_state& state) {
    if (start_ == nullptr) return;
    cudaEvent_t stop = nullptr;
    if (!state.spare.empty()) {
      stop = state.spare.back();
      state.spare.pop_back();
    } else if (cudaEventCreate(&stop) != cudaSuccess) {
      (void)cudaGetLastError();
      state.spare.push_back(start_);
      start_ = nullptr;
      return;
    }
    if (cudaEventRecord(stop, stream_) != cudaSuccess) {
      (void)cudaGetLastError();
      state.spare.push_back(start_);
      state.spare.push_back(stop);
      start_ = nullptr;
      return;
    }
    state.recorded.push_back({entry_, start_, stop});
    start_ = nullptr;
  }

  bool active_ = false;
  std::size_t entry_ = 0;
  cudaEvent_t start_ = nullptr;
  cudaStream_t stream_ = nullptr;
  profile_region* outer_ = nullptr;
};

}  // namespace detail
}  // namespace symflow::cuda
