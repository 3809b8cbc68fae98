#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#if defined(_OPENMP)
#include <omp.h>
#endif

namespace symflow::cpu {

// Below this many elements a fused loop runs on the calling thread: starting threads for a
// 100-element tensor costs more than the work.
inline constexpr std::size_t parallel_threshold = 1 << 15;

inline int max_threads() {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// Eigen splits a matrix product across its OpenMP threads from about 50 000 multiply-adds up. For
// products below this many, the split costs more than it saves, and when other programs share the
// cores each split also waits for a descheduled thread at its barrier: two character models
// training side by side took 400 s instead of 40. Such products run on the calling thread.
inline constexpr double serial_product_work = double(1 << 22);

// While alive, parallel regions this thread opens (Eigen's GEMM's among them) run on it alone when
// `serial` is true; the thread's previous setting comes back at the end of the scope.
class serial_scope {
 public:
  explicit serial_scope([[maybe_unused]] bool serial) {
#if defined(_OPENMP)
    if (serial) {
      saved_ = omp_get_max_threads();
      omp_set_num_threads(1);
    }
#endif
  }
  ~serial_scope() {
#if defined(_OPENMP)
    if (saved_ > 0) omp_set_num_threads(saved_);
#endif
  }
  serial_scope(const serial_scope&) = delete;
  serial_scope& operator=(const serial_scope&) = delete;

 private:
  int saved_ = 0;
};

// Splits [0, total) into one contiguous range per thread (boundaries on multiples of `align`) and
// calls body(thread, begin, end). Runs serially for small totals or without OpenMP.
template <class Body>
void parallel_ranges(std::size_t total, [[maybe_unused]] std::size_t align, Body&& body) {
  const int threads = total < parallel_threshold ? 1 : max_threads();
  if (threads <= 1) {
    body(0, std::size_t(0), total);
    return;
  }
#if defined(_OPENMP)
#pragma omp parallel num_threads(threads)
  {
    const std::size_t t = std::size_t(omp_get_thread_num());
    const std::size_t n = std::size_t(omp_get_num_threads());
    std::size_t chunk = (total + n - 1) / n;
    chunk = (chunk + align - 1) / align * align;
    const std::size_t begin = std::min(total, t * chunk), end = std::min(total, begin + chunk);
    body(t, begin, end);
  }
#endif
}

// Like parallel_ranges, but for large totals the threads take chunks in turn (boundaries on
// multiples of `align`) and body(thread, begin, end) is called once per chunk: each chunk is a share
// of what is left (the first ones large, later ones down to balanced_min_chunk), so on a shared machine
// a thread whose core is busy with another process does less of the pass instead of holding it up,
// which a fixed split per thread does. Below balanced_threshold the fixed split is kept: there the
// extra chunks cost a few percent and a pass is too short to be disturbed much. Only for work whose
// result does not depend on which thread does which chunk (elementwise maps): reductions use
// parallel_ranges, whose one range per thread fixes the order of the partial sums.
inline constexpr std::size_t balanced_threshold = std::size_t(1) << 21;
inline constexpr std::size_t balanced_min_chunk = std::size_t(1) << 16;

template <class Body>
void parallel_chunks(std::size_t total, std::size_t align, Body&& body) {
  const int threads = total < parallel_threshold ? 1 : max_threads();
  if (threads <= 1 || total < balanced_threshold) {
    parallel_ranges(total, align, body);
    return;
  }
#if defined(_OPENMP)
  std::atomic<std::size_t> next{0};
#pragma omp parallel num_threads(threads)
  {
    const std::size_t t = std::size_t(omp_get_thread_num());
    const std::size_t n = std::size_t(omp_get_num_threads());
    for (;;) {
      std::size_t begin = next.load(std::memory_order_relaxed), size = 0;
      do {
        if (begin >= total) break;
        size = std::max((total - begin) / (2 * n), balanced_min_chunk);
        size = (size + align - 1) / align * align;
      } while (!next.compare_exchange_weak(begin, begin + size, std::memory_order_relaxed));
      if (begin >= total) break;
      body(t, begin, std::min(total, begin + size));
    }
  }
#endif
}

}  // namespace symflow::cpu
