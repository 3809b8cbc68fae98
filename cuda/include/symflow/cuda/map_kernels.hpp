#pragma once
// The map kernels of an elementwise fusion group: one output element per thread (or V per thread with
// vector loads when everything is dense), the group's device evaluator computing each value.
// Launched by run_map (fusion_groups.hpp).
#include "device_code.hpp"
#if !defined(SYMFLOW_CUDA_DEVICE_CODE)
#error "symflow/cuda/map_kernels.hpp holds CUDA kernels: include <symflow/cuda.hpp> from a .cu file compiled by nvcc, or define SYMFLOW_CUDA_HOST_EMULATION"
#endif
#include <cuda_runtime.h>

#include <cstddef>

#include "device.hpp"
#include "kernel_primitives.hpp"

namespace symflow::cuda::dev {

// Dense map: every operand is laid out like the output (or is a scalar). Thread t computes
// elements [V t, V t + V) with vector loads and one vector store; the last thread takes the tail.
template <class T, class Ev, class Env, int V, bool Check = false>
__global__ void __launch_bounds__(block_threads) map_dense_kernel(T* __restrict__ out, const Ev ev, const Env env,
                                                                  std::size_t n, unsigned* flag) {
  nonfinite_check<Check, T> check;
  const std::size_t base = (std::size_t(blockIdx.x) * block_threads + threadIdx.x) * V;
  if (base + V <= n) {
    const vec<T, V> x = ev.template vec_at<V>(env, base);
    store_vec<T, V>(out + base, x);
    check.add(x);
  } else {
    for (std::size_t i = base; i < n; ++i) {
      const T x = ev.flat(env, i);
      out[i] = x;
      check.add(x);
    }
  }
  check.flush(flag);
}

// Strided map: coordinates from the linear output index, each operand applies its own strides
// (0 along broadcast axes).
template <class T, class Ev, class Env, class I, int FR, bool Check = false>
__global__ void __launch_bounds__(block_threads) map_strided_kernel(T* __restrict__ out, const Ev ev, const Env env,
                                                                    const index_frame<I> f, std::size_t n,
                                                                    unsigned* flag) {
  nonfinite_check<Check, T> check;
  for (std::size_t i = std::size_t(blockIdx.x) * block_threads + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * block_threads) {
    const T x = ev.at(env, decode<I, FR>(I(i), f));
    out[i] = x;
    check.add(x);
  }
  check.flush(flag);
}

}  // namespace symflow::cuda::dev
