#pragma once
#include <algorithm>
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

// Splits [0, total) into one contiguous range per thread (boundaries on multiples of `align`) and
// calls body(thread, begin, end). Runs serially for small totals or without OpenMP.
template <class Body>
void parallel_ranges(std::size_t total, std::size_t align, Body&& body) {
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

// Splits [0, total) into chunks (boundaries on multiples of `align`, about chunks_per_thread per
// thread) that the threads take in turn, calling body(thread, begin, end) once per chunk. On a
// shared machine a thread whose core is busy with another process then does fewer chunks instead of
// holding up the whole pass, which a fixed split per thread does. Only for work whose result does not
// depend on which thread does which chunk (elementwise maps): reductions use parallel_ranges, whose
// one range per thread fixes the order of the partial sums.
inline constexpr std::size_t chunks_per_thread = 16;

template <class Body>
void parallel_chunks(std::size_t total, std::size_t align, Body&& body) {
  const int threads = total < parallel_threshold ? 1 : max_threads();
  if (threads <= 1) {
    body(0, std::size_t(0), total);
    return;
  }
#if defined(_OPENMP)
  std::size_t chunk = std::max(total / (std::size_t(threads) * chunks_per_thread), parallel_threshold / 2);
  chunk = (chunk + align - 1) / align * align;
  const std::ptrdiff_t count = std::ptrdiff_t((total + chunk - 1) / chunk);
#pragma omp parallel num_threads(threads)
  {
    const std::size_t t = std::size_t(omp_get_thread_num());
#pragma omp for schedule(dynamic, 1)
    for (std::ptrdiff_t c = 0; c < count; ++c) {
      const std::size_t begin = std::size_t(c) * chunk;
      body(t, begin, std::min(total, begin + chunk));
    }
  }
#endif
}

}  // namespace symflow::cpu
