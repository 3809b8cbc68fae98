#pragma once
// Work split into independent tasks, each on one thread with its GEMMs on that thread alone, and a
// per-thread scratch buffer kept between calls. The convolutions run a chunk of images per task
// (ops/conv2d_columns.hpp); an optimiser update folded into a weight gradient's product runs a block
// of the product's rows per task (eval/cpu/accumulate.hpp).
#include <cstddef>

#include "aligned_buffer.hpp"
#include "parallel.hpp"

namespace symflow::cpu {

// A per-thread buffer of at least n elements, kept between calls: a fresh multi-MiB allocation costs
// a page fault per 4 KiB on every call. Tag keeps the buffers of different users apart (a convolution's
// column matrix and its filter adjoint's partial sums). Not re-entrant for one tag.
template <class T, class Tag = void>
T* thread_buffer(std::size_t n) {
  thread_local aligned_buffer<T> buffer;
  if (buffer.size() < n) buffer = aligned_buffer<T>(n);
  return buffer.data();
}

// Runs task(k) for k in [0, tasks), spread over OpenMP threads when there are several tasks and
// `work` multiply-adds in all, each task's GEMMs then on one thread (Eigen does not start threads
// inside a parallel region); otherwise in order on the calling thread, the GEMMs on it alone as
// well, so that a GEMM's blocking, and with it the order of its sums, is the same for any thread
// count. Only one large task lets Eigen spread its GEMM over the threads, whose blocking then
// follows the thread count. A task writes only its own memory.
template <class Task>
void run_tasks(std::size_t tasks, double work, Task&& task) {
#if defined(_OPENMP)
  if (tasks > 1 && max_threads() > 1 && !omp_in_parallel() && work >= serial_product_work) {
#pragma omp parallel for schedule(dynamic, 1)
    for (std::ptrdiff_t k = 0; k < std::ptrdiff_t(tasks); ++k) task(std::size_t(k));
    return;
  }
#endif
  const serial_scope serial(tasks > 1 || work < serial_product_work);
  for (std::size_t k = 0; k < tasks; ++k) task(k);
}

}  // namespace symflow::cpu
