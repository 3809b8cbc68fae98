#pragma once
// Kernels outside the fusion groups, with their launchers: fills, a few values computed on the host
// from extents alone, one_hot's scatter, and the check_numerics scan of an output another path
// (cuBLAS, a kernel op) wrote.
#include "device_code.hpp"
#if !defined(SYMFLOW_CUDA_DEVICE_CODE)
#error "symflow/cuda/utility_kernels.hpp holds CUDA kernels: include <symflow/cuda.hpp> from a .cu file compiled by nvcc, or define SYMFLOW_CUDA_HOST_EMULATION"
#endif
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include <symflow/ops/dropout.hpp>

#include "device.hpp"
#include "kernel_primitives.hpp"
#include "runtime.hpp"

namespace symflow::cuda::dev {

// check_numerics for an output another path wrote (cuBLAS, a kernel op): one pass over it.
template <class T>
__global__ void __launch_bounds__(block_threads) nonfinite_scan_kernel(const T* __restrict__ p, std::size_t n,
                                                                       unsigned* flag) {
  nonfinite_check<true, T> check;
  for (std::size_t i = std::size_t(blockIdx.x) * block_threads + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * block_threads)
    check.add(p[i]);
  check.flush(flag);
}

template <class T>
__global__ void __launch_bounds__(block_threads) fill_kernel(T* out, std::size_t n, T value) {
  for (std::size_t i = std::size_t(blockIdx.x) * block_threads + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * block_threads)
    out[i] = value;
}

// Up to `capacity` values carried in the kernel's arguments (results computed from extents alone).
template <class T>
struct small_values {
  static constexpr std::size_t capacity = 32;
  T v[capacity];
};
template <class T>
__global__ void set_values_kernel(T* out, std::size_t n, const small_values<T> values) {
  if (threadIdx.x < n) out[threadIdx.x] = values.v[threadIdx.x];
}

// one_hot: out is zeroed first; each label in [0, depth) sets one element.
template <class To, class L>
__global__ void __launch_bounds__(block_threads) one_hot_kernel(To* out, const L* __restrict__ labels,
                                                                std::size_t n, std::size_t depth) {
  for (std::size_t i = std::size_t(blockIdx.x) * block_threads + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * block_threads) {
    const L label = labels[i];
    if (label >= 0 && std::size_t(label) < depth) out[i * depth + std::size_t(label)] = To(1);
  }
}

// dropout: element i kept (times scale) or +0 by the op's own mask, a pure function of (seed, i)
// (ops/dropout.hpp, dropout_keeps), so the device draws the CPU's mask bit for bit.
template <class T>
__global__ void __launch_bounds__(block_threads) dropout_kernel(T* out, const T* __restrict__ x, std::size_t n,
                                                                double rate, std::uint64_t seed, T scale) {
  for (std::size_t i = std::size_t(blockIdx.x) * block_threads + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * block_threads)
    out[i] = dropout_keeps(seed, i, rate) ? x[i] * scale : T(0);
}

template <class T>
void fill(T* out, std::size_t n, T value, cudaStream_t s) {
  if (n == 0) return;
  SYMFLOW_LAUNCH(grid_for(n, block_threads, 65536), block_threads, 0, s, fill_kernel<canonical_t<T>>)(out, n, value);
  SYMFLOW_CUDA_CHECK_LAUNCH("fill_kernel");
}

// check_numerics of `n` values another path wrote: sets *flag if one is NaN or infinite.
template <class T>
void scan_nonfinite(const T* p, std::size_t n, unsigned* flag, cudaStream_t s) {
  if (n == 0) return;
  SYMFLOW_LAUNCH(grid_for(n, block_threads * 4, 4096), block_threads, 0, s, nonfinite_scan_kernel<canonical_t<T>>)(
      p, n, flag);
  SYMFLOW_CUDA_CHECK_LAUNCH("nonfinite_scan_kernel");
}

template <class T>
void set_values(T* out, std::size_t n, const small_values<T>& values, cudaStream_t s) {
  if (n == 0) return;
  SYMFLOW_LAUNCH(1, 32, 0, s, set_values_kernel<canonical_t<T>>)(out, n, values);
  SYMFLOW_CUDA_CHECK_LAUNCH("set_values_kernel");
}

}  // namespace symflow::cuda::dev
