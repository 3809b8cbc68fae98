#pragma once
// CUDA's execution model on the host, for the backend's device code compiled as C++ (the
// host-emulation build, docs/cuda.md "Host emulation"): the threads of a block run as fibers
// (ucontext) on one host thread and are switched at every barrier and warp-level operation, in an
// order chosen per run (forward, reverse or random; SYMFLOW_EMU_ORDER), so that a missing
// __syncthreads or a race on shared memory changes the result instead of passing by luck. Warp
// operations exchange values among the lanes their mask names by CUDA's rules. A block that can
// make no progress — a barrier some thread never reaches, a lane named in a mask that waits at
// another operation — is an emulation_error naming the kernel, block, threads and operations,
// never a hang.
//
// Blocks run one after another, in the same order setting, each on a fresh host thread so that its
// __shared__ memory starts zeroed; lanes that exited count as arrived at a barrier and are left out
// of a mask (as on Volta and later). A read from a lane that does not
// take part (exited, not in the mask, past the end of the block) gives poison: every byte 0xFF
// (NaN for floats), as an undefined value on a GPU would, so a result that uses it is visibly wrong.
#include <ucontext.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <random>
#include <source_location>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "model.hpp"

// AddressSanitizer is told of every switch between stacks, so that it follows the fibers' stacks.
#if defined(__SANITIZE_ADDRESS__)
#define SYMFLOW_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SYMFLOW_EMU_ASAN 1
#endif
#endif
#if defined(SYMFLOW_EMU_ASAN)
#include <sanitizer/common_interface_defs.h>
#endif

namespace symflow::cuda::emulation {

namespace detail {
inline void stack_switch_starts([[maybe_unused]] void** fake_stack, [[maybe_unused]] const void* bottom,
                                [[maybe_unused]] std::size_t size) {
#if defined(SYMFLOW_EMU_ASAN)
  __sanitizer_start_switch_fiber(fake_stack, bottom, size);
#endif
}
inline void stack_switch_ends([[maybe_unused]] void* fake_stack, [[maybe_unused]] const void** bottom_old,
                              [[maybe_unused]] std::size_t* size_old) {
#if defined(SYMFLOW_EMU_ASAN)
  __sanitizer_finish_switch_fiber(fake_stack, bottom_old, size_old);
#endif
}
}  // namespace detail


// Runs a grid: every block's threads as fibers, one block after another.
class grid_executor {
 public:
  void run(const char* kernel, dim3 grid, dim3 block, const std::function<void()>& body) {
    const std::uint64_t threads = std::uint64_t(block.x) * block.y * block.z;
    if (threads == 0 || threads > 1024 || block.z > 64)
      throw emulation_error(std::string(kernel) + ": launch with block " + text(block) +
                            ": a block holds 1 to 1024 threads (z at most 64)");
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 || grid.z > 65535)
      throw emulation_error(std::string(kernel) + ": launch with grid " + text(grid) +
                            ": every extent at least 1, y and z at most 65535");
    kernel_ = kernel;
    body_ = &body;
    const std::uint64_t blocks = std::uint64_t(grid.x) * grid.y * grid.z;
    statistics().kernels += 1;
    statistics().blocks += blocks;
    statistics().threads += blocks * threads;
    std::vector<std::uint64_t> order(blocks);
    for (std::uint64_t b = 0; b < blocks; ++b) order[b] = b;
    arrange(order, 0x9e3779b97f4a7c15ull);
    for (std::uint64_t b : order) {
      // Each block on a host thread of its own: its __shared__ arrays (thread_local statics) start
      // zeroed, not as the previous block left them, so a read before the block's own write shows.
      std::exception_ptr failure;
      std::thread worker([&] {
        try {
          grid_dim = grid;
          block_dim = block;
          block_index = dim3(unsigned(b % grid.x), unsigned(b / grid.x % grid.y), unsigned(b / (std::uint64_t(grid.x) * grid.y)));
          run_block(unsigned(threads), b);
        } catch (...) {
          failure = std::current_exception();
        }
      });
      worker.join();
      if (failure) std::rethrow_exception(failure);
    }
  }

  // Called by device code running in a fiber.
  void barrier(std::source_location site) {
    fiber& f = fibers_[current_];
    f.now = state::at_barrier;
    f.site = site;
    yield();
  }
  std::uint64_t warp_exchange(warp_op op, unsigned mask, std::uint64_t bits, int arg, int width) {
    const unsigned lane = current_ % warp_size;
    if (!(mask >> lane & 1u))
      throw emulation_error(where() + ": " + warp_op_name(op) + " with mask " + hex(mask) + " by lane " +
                            std::to_string(lane) + ", which the mask does not name");
    if (width <= 0 || width > int(warp_size) || (width & (width - 1)))
      throw emulation_error(where() + ": " + warp_op_name(op) + " with width " + std::to_string(width) +
                            ": a power of 2 from 1 to 32");
    fiber& f = fibers_[current_];
    f.now = state::at_warp_op;
    f.op = op;
    f.mask = mask;
    f.bits = bits;
    f.arg = arg;
    f.width = width;
    yield();
    return f.result;
  }
  // Lanes of the caller's warp that have not exited (__activemask).
  unsigned active_lanes() const {
    const unsigned warp = current_ / warp_size;
    unsigned m = 0;
    for (unsigned l = 0; l < warp_size; ++l) {
      const unsigned t = warp * warp_size + l;
      if (t < count_ && fibers_[t].now != state::finished) m |= 1u << l;
    }
    return m;
  }

 private:
  enum class state : std::uint8_t { runnable, at_barrier, at_warp_op, finished };
  struct fiber {
    ucontext_t context;
    state now = state::runnable;
    warp_op op = warp_op::sync;
    unsigned mask = 0;
    std::uint64_t bits = 0, result = 0;
    int arg = 0, width = 32;
    std::source_location site;  // of the __syncthreads it waits at
  };

  static std::string text(dim3 d) {
    return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
  }
  static std::string hex(unsigned m) {
    static const char digits[] = "0123456789abcdef";
    std::string s = "0x";
    for (int shift = 28; shift >= 0; shift -= 4) s += digits[(m >> shift) & 15u];
    return s;
  }
  std::string thread_text(unsigned t) const {
    const dim3 b = block_dim;
    return "thread " + text(dim3(t % b.x, t / b.x % b.y, t / (b.x * b.y)));
  }
  std::string where() const {
    return std::string(kernel_) + ": block " + text(block_index) + ", " + thread_text(current_);
  }

  void arrange(std::vector<std::uint64_t>& order, std::uint64_t salt) {
    const run_settings& s = settings();
    if (s.order == thread_order::reverse) std::reverse(order.begin(), order.end());
    if (s.order == thread_order::random) {
      std::mt19937_64 gen(s.seed ^ salt ^ (rounds_ * 0xbf58476d1ce4e5b9ull));
      std::shuffle(order.begin(), order.end(), gen);
    }
  }

  void yield() {
    void* fake_stack = nullptr;
    detail::stack_switch_starts(&fake_stack, scheduler_bottom_, scheduler_size_);
    swapcontext(&fibers_[current_].context, &scheduler_);
    detail::stack_switch_ends(fake_stack, &scheduler_bottom_, &scheduler_size_);
  }

  static void entry() {
    grid_executor& e = *active();
    detail::stack_switch_ends(nullptr, &e.scheduler_bottom_, &e.scheduler_size_);
    try {
      (*e.body_)();
    } catch (...) {
      if (!e.failure_) e.failure_ = std::current_exception();
    }
    e.fibers_[e.current_].now = state::finished;
    detail::stack_switch_starts(nullptr, e.scheduler_bottom_, e.scheduler_size_);  // this stack ends here
  }  // returns to the scheduler (uc_link)

 public:
  static grid_executor*& active() {
    thread_local grid_executor* e = nullptr;
    return e;
  }

 private:
  void prepare(unsigned threads) {
    const std::size_t stack = settings().stack_bytes;
    if (stacks_.size() < threads || stack_bytes_ != stack) {
      stacks_.clear();
      for (unsigned t = 0; t < threads; ++t) stacks_.emplace_back(new char[stack]);  // untouched until used
      stack_bytes_ = stack;
    }
    fibers_.assign(threads, fiber{});
    for (unsigned t = 0; t < threads; ++t) {
      fiber& f = fibers_[t];
      getcontext(&f.context);
      f.context.uc_stack.ss_sp = stacks_[t].get();
      f.context.uc_stack.ss_size = stack;
      f.context.uc_link = &scheduler_;
      makecontext(&f.context, &grid_executor::entry, 0);
    }
  }

  void resume(unsigned t) {
    current_ = t;
    const dim3 b = block_dim;
    thread_index = dim3(t % b.x, t / b.x % b.y, t / (b.x * b.y));
    void* fake_stack = nullptr;
    detail::stack_switch_starts(&fake_stack, stacks_[t].get(), stack_bytes_);
    swapcontext(&scheduler_, &fibers_[t].context);
    detail::stack_switch_ends(fake_stack, nullptr, nullptr);
  }

  void run_block(unsigned threads, std::uint64_t block) {
    count_ = threads;
    prepare(threads);
    failure_ = nullptr;
    grid_executor* outer = active();
    active() = this;
    struct restore {
      grid_executor* outer;
      ~restore() { grid_executor::active() = outer; }
    } restore_active{outer};
    std::vector<std::uint64_t> order(threads);
    for (;;) {
      for (unsigned t = 0; t < threads; ++t) order[t] = t;
      arrange(order, block + 1);
      ++rounds_;
      for (std::uint64_t t : order)
        if (fibers_[t].now == state::runnable) {
          resume(unsigned(t));
          if (failure_) std::rethrow_exception(failure_);
        }
      bool all_finished = true;
      for (const fiber& f : fibers_) all_finished = all_finished && f.now == state::finished;
      if (all_finished) return;
      if (!complete_warp_ops() && !release_barrier()) throw stuck();
    }
  }

  // Lanes a warp operation with this mask, called in warp w, waits for: named and not exited.
  unsigned participants(unsigned warp, unsigned mask) const {
    unsigned p = 0;
    for (unsigned l = 0; l < warp_size; ++l) {
      const unsigned t = warp * warp_size + l;
      if ((mask >> l & 1u) && t < count_ && fibers_[t].now != state::finished) p |= 1u << l;
    }
    return p;
  }

  bool complete_warp_ops() {
    bool progress = false;
    for (unsigned t = 0; t < count_; ++t) {
      const fiber& first = fibers_[t];
      if (first.now != state::at_warp_op) continue;
      const unsigned warp = t / warp_size, p = participants(warp, first.mask);
      bool ready = true;
      for (unsigned l = 0; l < warp_size && ready; ++l)
        if (p >> l & 1u) {
          const fiber& f = fibers_[warp * warp_size + l];
          ready = f.now == state::at_warp_op && f.op == first.op && f.mask == first.mask;
        }
      if (!ready) continue;
      exchange(warp, p);
      progress = true;
    }
    return progress;
  }

  void exchange(unsigned warp, unsigned p) {
    const unsigned base = warp * warp_size;
    unsigned votes = 0;
    for (unsigned l = 0; l < warp_size; ++l)
      if ((p >> l & 1u) && fibers_[base + l].bits) votes |= 1u << l;
    for (unsigned l = 0; l < warp_size; ++l) {
      if (!(p >> l & 1u)) continue;
      fiber& f = fibers_[base + l];
      const unsigned w = unsigned(f.width), group = l & ~(w - 1);
      long src = l;
      switch (f.op) {
        case warp_op::shfl: src = long(group + (unsigned(f.arg) & (w - 1))); break;
        case warp_op::shfl_up: src = (l & (w - 1)) < unsigned(f.arg) ? long(l) : long(l) - f.arg; break;
        case warp_op::shfl_down: src = (l & (w - 1)) + unsigned(f.arg) >= w ? long(l) : long(l) + f.arg; break;
        case warp_op::shfl_xor: {
          const unsigned s = l ^ unsigned(f.arg);
          src = s >= group + w ? long(l) : long(s);
          break;
        }
        default: break;
      }
      switch (f.op) {
        case warp_op::ballot: f.result = votes; break;
        case warp_op::any: f.result = votes != 0; break;
        case warp_op::all: f.result = votes == p; break;
        case warp_op::sync: f.result = 0; break;
        default:
          f.result = (src >= 0 && src < long(warp_size) && (p >> src & 1u)) ? fibers_[base + unsigned(src)].bits : poison_bits;
      }
      f.now = state::runnable;
    }
  }

  static bool same_site(const std::source_location& a, const std::source_location& b) {
    return a.line() == b.line() && a.column() == b.column() && std::string_view(a.file_name()) == b.file_name();
  }
  // All threads that have not exited wait at one __syncthreads: they go on together.
  bool release_barrier() {
    const fiber* first = nullptr;
    for (const fiber& f : fibers_) {
      if (f.now == state::finished) continue;
      if (f.now != state::at_barrier) return false;
      if (!first) first = &f;
      else if (!same_site(first->site, f.site)) return false;
    }
    bool any = false;
    for (fiber& f : fibers_)
      if (f.now == state::at_barrier) {
        f.now = state::runnable;
        any = true;
      }
    return any;
  }

  emulation_error stuck() const {
    std::string what = std::string(kernel_) + ": block " + text(block_index) + " can make no progress:";
    unsigned shown = 0, barrier = 0, finished = 0;
    std::vector<std::string> sites;
    for (unsigned t = 0; t < count_; ++t) {
      const fiber& f = fibers_[t];
      if (f.now == state::at_barrier) {
        ++barrier;
        const std::string site = std::string(f.site.file_name()) + ":" + std::to_string(f.site.line());
        if (std::find(sites.begin(), sites.end(), site) == sites.end() && sites.size() < 4) sites.push_back(site);
      }
      if (f.now == state::finished) ++finished;
      if (f.now == state::at_warp_op && shown < 4) {
        ++shown;
        what += " " + thread_text(t) + " (warp " + std::to_string(t / warp_size) + ", lane " +
                std::to_string(t % warp_size) + ") waits in " + warp_op_name(f.op) + " with mask " + hex(f.mask) + ";";
      }
    }
    what += " " + std::to_string(barrier) + " threads wait at __syncthreads";
    if (!sites.empty()) {
      what += " (";
      for (std::size_t i = 0; i < sites.size(); ++i) what += (i ? ", " : "") + sites[i];
      what += ")";
    }
    what += ", " + std::to_string(finished) +
            " have exited (a barrier not every thread reaches, threads at different barriers, or a warp "
            "operation whose mask names a lane that waits elsewhere)";
    return emulation_error(what);
  }

  const char* kernel_ = "kernel";
  const std::function<void()>* body_ = nullptr;
  std::vector<fiber> fibers_;
  std::vector<std::unique_ptr<char[]>> stacks_;
  std::size_t stack_bytes_ = 0;
  ucontext_t scheduler_{};
  const void* scheduler_bottom_ = nullptr;  // the host thread's stack, for AddressSanitizer
  std::size_t scheduler_size_ = 0;
  unsigned current_ = 0, count_ = 0;
  std::uint64_t rounds_ = 0;
  std::exception_ptr failure_;
};

// The executor of the kernel running on this host thread (device code calls into it).
inline grid_executor& running() {
  grid_executor* e = grid_executor::active();
  if (!e) throw emulation_error("a device function (__syncthreads, a warp operation) was called outside a kernel launch");
  return *e;
}

}  // namespace symflow::cuda::emulation
