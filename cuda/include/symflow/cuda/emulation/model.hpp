#pragma once
// What the emulator of CUDA's execution model (executor.hpp) is configured and reports with: grid
// and block extents, the thread order of a run (SYMFLOW_EMU_ORDER), the warp operations, the
// poison a read from a lane that takes no part gives, and the error for code that is wrong on a GPU.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <symflow/core/error.hpp>

namespace symflow::cuda::emulation {

// The emulator found code that is wrong on a GPU (a deadlock, a divergent warp operation, a lane
// outside its own mask, a bad launch).
class emulation_error : public error {
 public:
  using error::error;
};

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

enum class thread_order { forward, reverse, random };

struct run_settings {
  thread_order order = thread_order::forward;
  std::uint64_t seed = 1;                    // for thread_order::random
  std::size_t stack_bytes = 256 * 1024;      // per emulated thread
};

namespace detail {
// SYMFLOW_EMU_ORDER: "forward" (default), "reverse", "random" or "random:SEED".
inline run_settings settings_from_environment() {
  run_settings s;
  const char* v = std::getenv("SYMFLOW_EMU_ORDER");
  if (!v) return s;
  const std::string_view text(v);
  if (text == "forward") s.order = thread_order::forward;
  else if (text == "reverse") s.order = thread_order::reverse;
  else if (text.substr(0, 6) == "random") {
    s.order = thread_order::random;
    if (text.size() > 7 && text[6] == ':') s.seed = std::strtoull(v + 7, nullptr, 10);
  } else {
    throw emulation_error("SYMFLOW_EMU_ORDER='" + std::string(text.substr(0, 40)) +
                          "': expected forward, reverse, random or random:SEED");
  }
  return s;
}
}  // namespace detail

// The settings every launch uses; tests may change them between launches.
inline run_settings& settings() {
  static run_settings s = detail::settings_from_environment();
  return s;
}

// The emulated thread's coordinates, set by the scheduler before it resumes a thread.
inline thread_local dim3 thread_index{0, 0, 0}, block_index{0, 0, 0}, block_dim, grid_dim;

inline constexpr unsigned warp_size = 32;

enum class warp_op : std::uint8_t { shfl, shfl_up, shfl_down, shfl_xor, ballot, any, all, sync };

inline const char* warp_op_name(warp_op op) {
  switch (op) {
    case warp_op::shfl: return "__shfl_sync";
    case warp_op::shfl_up: return "__shfl_up_sync";
    case warp_op::shfl_down: return "__shfl_down_sync";
    case warp_op::shfl_xor: return "__shfl_xor_sync";
    case warp_op::ballot: return "__ballot_sync";
    case warp_op::any: return "__any_sync";
    case warp_op::all: return "__all_sync";
    case warp_op::sync: return "__syncwarp";
  }
  return "a warp operation";
}

// What the emulated device did, process-wide: how a step's kernels and traffic are counted without a
// GPU (work recorded by a capture counts when a graph launch replays it).
struct device_statistics {
  std::atomic<std::uint64_t> kernels{0}, blocks{0}, threads{0};  // launches that ran
  std::atomic<std::uint64_t> gemms{0}, gemm_flops{0};            // cuBLAS / cuBLASLt products
  std::atomic<std::uint64_t> copies{0}, copied_bytes{0};         // cudaMemcpy*
  std::atomic<std::uint64_t> sets{0}, set_bytes{0};              // cudaMemset*
  void reset() {
    for (auto* c : {&kernels, &blocks, &threads, &gemms, &gemm_flops, &copies, &copied_bytes, &sets, &set_bytes}) c->store(0);
  }
};
inline device_statistics& statistics() {
  static device_statistics s;
  return s;
}

inline constexpr std::uint64_t poison_bits = ~std::uint64_t(0);

}  // namespace symflow::cuda::emulation
