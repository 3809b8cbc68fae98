#pragma once
// The templated kernels every fusion group instantiates: a map over the group's frame (dense and
// vectorised, or strided with broadcasting), and reductions that evaluate their fused elementwise
// operand on the fly (no temporary holds it). Instantiated on name-free device evaluators only.
#if !defined(__CUDACC__)
#error "symflow/cuda/kernels.hpp holds CUDA kernels: include <symflow/cuda.hpp> from a .cu file compiled by nvcc"
#endif
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "device.hpp"
#include "runtime.hpp"

namespace symflow::cuda::dev {

inline constexpr int block_threads = 256;
inline constexpr int vector_width = 4;  // elements per thread in the dense map (16-byte loads for f32)

// Frame extents in the index type of the strided map (32-bit when the frame is small enough).
template <class I>
struct index_frame {
  int rank;
  I extents[max_rank];
};

// Linear index -> coordinates over `f` (axis rank-1 innermost); axes past rank stay 0.
template <class I, int FR>
SYMFLOW_DEVICE coords<I, FR> decode(I i, const index_frame<I>& f) {
  coords<I, FR> c;
#pragma unroll
  for (int a = FR - 1; a >= 0; --a) {
    if (a >= f.rank) {
      c.c[a] = 0;
    } else if (a == 0) {
      c.c[a] = i;
    } else {
      c.c[a] = i % f.extents[a];
      i /= f.extents[a];
    }
  }
  return c;
}

// Dense map: every operand is laid out like the output (or is a scalar). Thread t computes
// elements [V t, V t + V) with vector loads and one vector store; the last thread takes the tail.
template <class T, class Ev, int V>
__global__ void __launch_bounds__(block_threads) map_dense_kernel(T* __restrict__ out, const Ev ev, std::size_t n) {
  const std::size_t base = (std::size_t(blockIdx.x) * block_threads + threadIdx.x) * V;
  if (base + V <= n) {
    store_vec<T, V>(out + base, ev.template vec_at<V>(base));
  } else {
    for (std::size_t i = base; i < n; ++i) out[i] = ev.flat(i);
  }
}

// Strided map: coordinates from the linear output index, each operand applies its own strides
// (0 along broadcast axes).
template <class T, class Ev, class I, int FR>
__global__ void __launch_bounds__(block_threads) map_strided_kernel(T* __restrict__ out, const Ev ev,
                                                                    const index_frame<I> f, std::size_t n) {
  for (std::size_t i = std::size_t(blockIdx.x) * block_threads + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * block_threads)
    out[i] = ev.at(decode<I, FR>(I(i), f));
}

// The frame of a reduction's operand: bit a of `reduced` marks a reduced axis. `single_reduced` /
// `single_kept` name the only reduced / kept axis when there is exactly one (-1 otherwise), which
// spares the divisions of the general decoding.
struct reduce_frame {
  int rank;
  unsigned reduced;
  int single_reduced;
  int single_kept;
  std::size_t extents[max_rank];
};

// Writes index i, decoded over the axes whose reduced-bit equals `reduced`, into c.
template <int FR>
SYMFLOW_DEVICE void decode_part(std::size_t i, const reduce_frame& f, bool reduced, int single,
                                coords<std::size_t, FR>& c) {
  if (single >= 0) {
#pragma unroll
    for (int a = 0; a < FR; ++a)
      if (a == single) c.c[a] = i;
    return;
  }
#pragma unroll
  for (int a = FR - 1; a >= 0; --a) {
    if (a < f.rank && (((f.reduced >> a) & 1u) != 0) == reduced) {
      c.c[a] = i % f.extents[a];
      i /= f.extents[a];
    }
  }
}

template <class T>
SYMFLOW_DEVICE T shfl_down(T v, int offset) {
  if constexpr (sizeof(T) < 4) return T(__shfl_down_sync(0xffffffffu, int(v), offset));
  else return __shfl_down_sync(0xffffffffu, v, offset);
}
template <class Op, class T>
SYMFLOW_DEVICE T warp_reduce(T v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = Op::combine(v, shfl_down(v, offset));
  return v;
}

// Reduction whose innermost frame axis is reduced: a group of G threads (a warp, or the whole block)
// per output, striding along the reduced elements (coalesced). blockIdx.y picks a contiguous chunk of
// the reduced elements when the outputs alone cannot fill the GPU; each chunk then writes a partial.
template <class Op, class T, class Ev, int FR>
__global__ void __launch_bounds__(block_threads) reduce_rows_kernel(const Ev ev, const reduce_frame f, T* out,
                                                                    std::size_t out_size, std::size_t count,
                                                                    std::size_t chunk, T identity, int group_log2,
                                                                    bool partial) {
  __shared__ T warp_results[block_threads / 32];
  const int group = 1 << group_log2;
  const int groups_per_block = block_threads >> group_log2;
  const int lane = int(threadIdx.x) & (group - 1);
  const std::size_t r0 = std::size_t(blockIdx.y) * chunk;
  const std::size_t r1 = r0 + chunk < count ? r0 + chunk : count;
  for (std::size_t o = std::size_t(blockIdx.x) * groups_per_block + (threadIdx.x >> group_log2); o < out_size;
       o += std::size_t(gridDim.x) * groups_per_block) {
    coords<std::size_t, FR> c{};
    decode_part<FR>(o, f, false, f.single_kept, c);
    auto value = [&](std::size_t r) {
      coords<std::size_t, FR> cc = c;
      decode_part<FR>(r, f, true, f.single_reduced, cc);
      return T(ev.at(cc));
    };
    T acc = identity;
    std::size_t r = r0 + lane;
    for (; r + 3 * std::size_t(group) < r1; r += 4 * std::size_t(group)) {
      const T x0 = value(r), x1 = value(r + group), x2 = value(r + 2 * group), x3 = value(r + 3 * group);
      acc = Op::combine(Op::combine(acc, x0), Op::combine(x1, Op::combine(x2, x3)));
    }
    for (; r < r1; r += group) acc = Op::combine(acc, value(r));
    acc = warp_reduce<Op>(acc);
    if (group > 32) {  // the whole block is one group: combine the warps' results
      if ((threadIdx.x & 31) == 0) warp_results[threadIdx.x >> 5] = acc;
      __syncthreads();
      if (threadIdx.x < 32) {
        acc = threadIdx.x < block_threads / 32 ? warp_results[threadIdx.x] : identity;
        acc = warp_reduce<Op>(acc);
      }
      __syncthreads();
    }
    if (lane == 0) {
      if (partial) out[std::size_t(blockIdx.y) * out_size + o] = acc;
      else out[o] = Op::finish(acc, count);
    }
  }
}

// Reduction whose innermost frame axis is kept: one thread per output (adjacent threads read
// adjacent elements), looping over its reduced elements; blockIdx.y splits them into chunks.
template <class Op, class T, class Ev, int FR>
__global__ void __launch_bounds__(block_threads) reduce_cols_kernel(const Ev ev, const reduce_frame f, T* out,
                                                                    std::size_t out_size, std::size_t count,
                                                                    std::size_t chunk, T identity, bool partial) {
  const std::size_t r0 = std::size_t(blockIdx.y) * chunk;
  const std::size_t r1 = r0 + chunk < count ? r0 + chunk : count;
  for (std::size_t o = std::size_t(blockIdx.x) * block_threads + threadIdx.x; o < out_size;
       o += std::size_t(gridDim.x) * block_threads) {
    coords<std::size_t, FR> c{};
    decode_part<FR>(o, f, false, f.single_kept, c);
    auto value = [&](std::size_t r) {
      coords<std::size_t, FR> cc = c;
      decode_part<FR>(r, f, true, f.single_reduced, cc);
      return T(ev.at(cc));
    };
    T acc = identity;
    std::size_t r = r0;
    for (; r + 3 < r1; r += 4) {
      const T x0 = value(r), x1 = value(r + 1), x2 = value(r + 2), x3 = value(r + 3);
      acc = Op::combine(Op::combine(acc, x0), Op::combine(x1, Op::combine(x2, x3)));
    }
    for (; r < r1; ++r) acc = Op::combine(acc, value(r));
    if (partial) out[std::size_t(blockIdx.y) * out_size + o] = acc;
    else out[o] = Op::finish(acc, count);
  }
}

// Combines the chunks' partials in order (deterministic) and applies the op's finish step.
template <class Op, class T>
__global__ void __launch_bounds__(block_threads) reduce_finish_kernel(const T* __restrict__ partials, T* out,
                                                                      std::size_t out_size, int chunks,
                                                                      std::size_t count, T identity) {
  for (std::size_t o = std::size_t(blockIdx.x) * block_threads + threadIdx.x; o < out_size;
       o += std::size_t(gridDim.x) * block_threads) {
    T acc = identity;
    for (int s = 0; s < chunks; ++s) acc = Op::combine(acc, partials[std::size_t(s) * out_size + o]);
    out[o] = Op::finish(acc, count);
  }
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

// Blocks for a grid-stride loop over n items of `per_block` each (capped; the loop covers the rest).
inline unsigned grid_for(std::size_t n, std::size_t per_block, std::size_t cap = std::size_t(1) << 20) {
  const std::size_t b = (n + per_block - 1) / per_block;
  return unsigned(std::max<std::size_t>(1, std::min(b, cap)));
}

template <class T>
void fill(T* out, std::size_t n, T value, cudaStream_t s) {
  if (n == 0) return;
  fill_kernel<canonical_t<T>><<<grid_for(n, block_threads, 65536), block_threads, 0, s>>>(out, n, value);
  SYMFLOW_CUDA_CHECK_LAUNCH("fill_kernel");
}

template <class T>
void set_values(T* out, std::size_t n, const small_values<T>& values, cudaStream_t s) {
  if (n == 0) return;
  set_values_kernel<canonical_t<T>><<<1, 32, 0, s>>>(out, n, values);
  SYMFLOW_CUDA_CHECK_LAUNCH("set_values_kernel");
}

}  // namespace symflow::cuda::dev
