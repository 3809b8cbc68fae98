#pragma once
// softmax_cross_entropy and its backward op on the device, keyed by op type like matmul
// (kernel_ops.hpp): the CPU's algorithm (ops/softmax_cross_entropy.hpp, sce_detail) with one thread
// per row — the row maximum found as std::max_element finds it, exp and log in double, the result
// rounded to the logits' dtype — so results agree with the CPU's to the last bits the device's
// double exp and log allow (exactly, under host emulation). A negative label is padding (a zero
// row), as there. A label of K or more is the CPU's value_error, naming the example: the kernels
// note the first such example and it is read back after them (one small synchronising read); in a
// stream being captured into a CUDA graph nothing can be read back, so such a row is NaN instead.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <symflow/ops/softmax_cross_entropy.hpp>

#include "kernel_ops.hpp"

namespace symflow::cuda {
namespace dev {

// Row i's maximum (std::max_element's: the first element, replaced by any later one it is less
// than) and the sum of exp(x - maximum) in double.
template <class T>
SYMFLOW_DEVICE void sce_row_stats(const T* row, unsigned long long k, double& m, double& s) {
  T largest = row[0];
  for (unsigned long long j = 1; j < k; ++j)
    if (largest < row[j]) largest = row[j];
  m = double(largest);
  s = 0;
  for (unsigned long long j = 0; j < k; ++j) s += ::exp(double(row[j]) - m);
}

template <class L>
SYMFLOW_DEVICE bool sce_label_out_of_range(L label, unsigned long long k, unsigned long long i,
                                          unsigned long long* first_bad) {
  if (label < 0 || static_cast<unsigned long long>(label) < k) return false;
  if (first_bad) atomicMin(first_bad, i);
  return true;
}

template <class T, class L>
__global__ void __launch_bounds__(block_threads) sce_forward_kernel(const T* __restrict__ logits, const L* __restrict__ labels,
                                                                    T* loss, unsigned long long n, unsigned long long k,
                                                                    unsigned long long* first_bad) {
  for (unsigned long long i = blockIdx.x * 1ull * block_threads + threadIdx.x; i < n; i += 1ull * gridDim.x * block_threads) {
    const L label = labels[i];
    if (label < 0) {
      loss[i] = T(0);
      continue;
    }
    if (sce_label_out_of_range(label, k, i, first_bad)) {
      loss[i] = std::numeric_limits<T>::quiet_NaN();
      continue;
    }
    const T* row = logits + i * k;
    double m, s;
    sce_row_stats(row, k, m, s);
    loss[i] = T(m + ::log(s) - double(row[static_cast<unsigned long long>(label)]));
  }
}

template <class T, class L>
__global__ void __launch_bounds__(block_threads) sce_backward_kernel(const T* __restrict__ g, const T* __restrict__ logits,
                                                                     const L* __restrict__ labels, T* out,
                                                                     unsigned long long n, unsigned long long k,
                                                                     unsigned long long* first_bad) {
  for (unsigned long long i = blockIdx.x * 1ull * block_threads + threadIdx.x; i < n; i += 1ull * gridDim.x * block_threads) {
    const L label = labels[i];
    T* d = out + i * k;
    const bool bad = sce_label_out_of_range(label, k, i, first_bad);
    if (label < 0 || bad) {
      const T fill = bad ? std::numeric_limits<T>::quiet_NaN() : T(0);
      for (unsigned long long j = 0; j < k; ++j) d[j] = fill;
      continue;
    }
    const T* row = logits + i * k;
    double m, s;
    sce_row_stats(row, k, m, s);
    const double scale = double(g[i]) / s;
    for (unsigned long long j = 0; j < k; ++j) d[j] = T(::exp(double(row[j]) - m) * scale);
    d[static_cast<unsigned long long>(label)] -= g[i];
  }
}

}  // namespace dev

namespace detail {
// A slot the kernels note the first example with an out-of-range label in (null while capturing).
template <class Ctx>
unsigned long long* first_bad_label_slot(Ctx& ctx) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  SYMFLOW_CUDA_CHECK(cudaStreamIsCapturing(ctx.stream, &capture));
  if (capture != cudaStreamCaptureStatusNone) return nullptr;
  auto* slot = ctx.template allocate<unsigned long long>(1);
  SYMFLOW_CUDA_CHECK(cudaMemsetAsync(slot, 0xFF, sizeof(unsigned long long), ctx.stream));
  return slot;
}
// The CPU's value_error when a kernel noted an example: the labels up to that first bad one come
// back to the host and the CPU's own check (ops::sce_detail::check_labels) raises it.
template <class L>
void throw_if_bad_label(std::string_view op, const unsigned long long* slot, const L* labels, std::size_t k, cudaStream_t s) {
  if (!slot) return;
  unsigned long long first = 0;
  SYMFLOW_CUDA_CHECK(cudaMemcpyAsync(&first, slot, sizeof(first), cudaMemcpyDeviceToHost, s));
  SYMFLOW_CUDA_CHECK(cudaStreamSynchronize(s));
  if (first == ~0ull) return;
  std::vector<L> host(std::size_t(first) + 1);
  SYMFLOW_CUDA_CHECK(cudaMemcpyAsync(host.data(), labels, host.size() * sizeof(L), cudaMemcpyDeviceToHost, s));
  SYMFLOW_CUDA_CHECK(cudaStreamSynchronize(s));
  ops::sce_detail::check_labels(op, host.data(), host.size(), k);  // throws at example `first`
}

template <>
struct kernel_impl<ops::softmax_cross_entropy_op> {
  static constexpr bool available = true;
  template <class Ctx>
  static std::string placement(const Ctx&) {
    return "sce_forward_kernel (a thread per row, block " + std::to_string(dev::block_threads) + ")";
  }
  template <class T, class Ctx, std::size_t RO, class CL, class CY>
  static void run(const ops::softmax_cross_entropy_op&, Ctx& ctx, T* out, const extents_t<RO>& oe, CL& logits, CY& labels) {
    const std::size_t n = oe[0];
    if (n == 0) return;
    const device_leaf<T> l = materialize(logits, ctx, true);
    const auto y = materialize(labels, ctx, true);
    using L = typename CY::value_type;
    const std::size_t k = l.extents[1];
    unsigned long long* bad = detail::first_bad_label_slot(ctx);
    SYMFLOW_LAUNCH(dev::grid_for(n, dev::block_threads), dev::block_threads, 0, ctx.stream,
                   dev::sce_forward_kernel<dev::canonical_t<T>, dev::canonical_t<L>>)(l.data, y.data, out, n, k, bad);
    SYMFLOW_CUDA_CHECK_LAUNCH("sce_forward_kernel");
    detail::throw_if_bad_label("softmax_cross_entropy", bad, y.data, k, ctx.stream);
  }
};

template <>
struct kernel_impl<ops::softmax_cross_entropy_backward_op> {
  static constexpr bool available = true;
  template <class Ctx>
  static std::string placement(const Ctx&) {
    return "sce_backward_kernel (a thread per row, block " + std::to_string(dev::block_threads) + ")";
  }
  template <class T, class Ctx, std::size_t RO, class CG, class CL, class CY>
  static void run(const ops::softmax_cross_entropy_backward_op&, Ctx& ctx, T* out, const extents_t<RO>& oe, CG& g,
                  CL& logits, CY& labels) {
    const std::size_t n = oe[0], k = oe[1];
    if (n == 0) return;
    const device_leaf<T> lg = materialize(g, ctx, true), l = materialize(logits, ctx, true);
    const auto y = materialize(labels, ctx, true);
    using L = typename CY::value_type;
    unsigned long long* bad = detail::first_bad_label_slot(ctx);
    SYMFLOW_LAUNCH(dev::grid_for(n, dev::block_threads), dev::block_threads, 0, ctx.stream,
                   dev::sce_backward_kernel<dev::canonical_t<T>, dev::canonical_t<L>>)(lg.data, l.data, y.data, out, n, k, bad);
    SYMFLOW_CUDA_CHECK_LAUNCH("sce_backward_kernel");
    detail::throw_if_bad_label("softmax_cross_entropy_backward", bad, y.data, k, ctx.stream);
  }
};

}  // namespace detail
}  // namespace symflow::cuda
