#pragma once
// The reduction kernels: a reduction's fused elementwise operand is evaluated on the fly (no
// temporary holds it), along rows (innermost axis reduced) or columns (innermost axis kept), split
// into chunks whose partials a finishing kernel combines in a fixed order (deterministic results).
// Launched by run_reduce (fusion_groups.hpp).
#include "device_code.hpp"
#if !defined(SYMFLOW_CUDA_DEVICE_CODE)
#error "symflow/cuda/reduce_kernels.hpp holds CUDA kernels: include <symflow/cuda.hpp> from a .cu file compiled by nvcc, or define SYMFLOW_CUDA_HOST_EMULATION"
#endif
#include <cuda_runtime.h>

#include <cstddef>

#include "device.hpp"
#include "kernel_primitives.hpp"

namespace symflow::cuda::dev {

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

// Reduction whose innermost frame axis is reduced: a group of G threads (a warp, or the whole block)
// per output, striding along the reduced elements (coalesced). blockIdx.y picks a contiguous chunk of
// the reduced elements when the outputs alone cannot fill the GPU; each chunk then writes a partial.
// Output o's accumulator: with chunked rows (partial), this chunk's partial, combined later by
// reduce_finish_kernel; otherwise the finished result, checked when check_numerics is on.
template <class Op, class T, class Check>
SYMFLOW_DEVICE void store_reduced(T acc, std::size_t o, T* out, std::size_t out_size, std::size_t count, bool partial,
                                  Check& check) {
  if (partial) {
    out[std::size_t(blockIdx.y) * out_size + o] = acc;
  } else {
    const T r = Op::finish(acc, count);
    out[o] = r;
    check.add(r);
  }
}

template <class Op, class T, class Ev, class Env, int FR, bool Check = false>
__global__ void __launch_bounds__(block_threads) reduce_rows_kernel(const Ev ev, const Env env, const reduce_frame f, T* out,
                                                                    std::size_t out_size, std::size_t count,
                                                                    std::size_t chunk, T identity, int group_log2,
                                                                    bool partial, unsigned* flag) {
  __shared__ T warp_results[block_threads / 32];
  nonfinite_check<Check, T> check;
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
      return T(ev.at(env, cc));
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
      store_reduced<Op>(acc, o, out, out_size, count, partial, check);
    }
  }
  check.flush(flag);
}

// Reduction whose innermost frame axis is kept (sum(x, axes<0>): a bias gradient). A block takes 32
// adjacent outputs (adjacent threads read adjacent elements) and splits their reduced elements among
// its 8 warps, which combine through shared memory in a fixed order: eight times the loads in flight
// of one thread per output, which left narrow reductions ([batch, 10] -> [10]) waiting on memory
// latency. blockIdx.y picks a chunk of the reduced elements when the outputs cannot fill the GPU.
inline constexpr int cols_per_block = 32;
inline constexpr int col_row_groups = block_threads / cols_per_block;
template <class Op, class T, class Ev, class Env, int FR, bool Check = false>
__global__ void __launch_bounds__(block_threads) reduce_cols_kernel(const Ev ev, const Env env, const reduce_frame f, T* out,
                                                                    std::size_t out_size, std::size_t count,
                                                                    std::size_t chunk, T identity, bool partial,
                                                                    unsigned* flag) {
  __shared__ T row_group_results[col_row_groups][cols_per_block];
  nonfinite_check<Check, T> check;
  const int column = int(threadIdx.x) % cols_per_block, row_group = int(threadIdx.x) / cols_per_block;
  const std::size_t r0 = std::size_t(blockIdx.y) * chunk;
  const std::size_t r1 = r0 + chunk < count ? r0 + chunk : count;
  for (std::size_t tile = blockIdx.x; tile * cols_per_block < out_size; tile += gridDim.x) {
    const std::size_t o = tile * cols_per_block + column;
    T acc = identity;
    if (o < out_size) {
      coords<std::size_t, FR> c{};
      decode_part<FR>(o, f, false, f.single_kept, c);
      auto value = [&](std::size_t r) {
        coords<std::size_t, FR> cc = c;
        decode_part<FR>(r, f, true, f.single_reduced, cc);
        return T(ev.at(env, cc));
      };
      constexpr std::size_t step = col_row_groups;
      std::size_t r = r0 + row_group;
      for (; r + 3 * step < r1; r += 4 * step) {
        const T x0 = value(r), x1 = value(r + step), x2 = value(r + 2 * step), x3 = value(r + 3 * step);
        acc = Op::combine(Op::combine(acc, x0), Op::combine(x1, Op::combine(x2, x3)));
      }
      for (; r < r1; r += step) acc = Op::combine(acc, value(r));
    }
    row_group_results[row_group][column] = acc;
    __syncthreads();
    if (row_group == 0 && o < out_size) {
      for (int g = 1; g < col_row_groups; ++g) acc = Op::combine(acc, row_group_results[g][column]);
      store_reduced<Op>(acc, o, out, out_size, count, partial, check);
    }
    __syncthreads();
  }
  check.flush(flag);
}

// Combines the chunks' partials in order (deterministic) and applies the op's finish step.
template <class Op, class T, bool Check = false>
__global__ void __launch_bounds__(block_threads) reduce_finish_kernel(const T* __restrict__ partials, T* out,
                                                                      std::size_t out_size, int chunks,
                                                                      std::size_t count, T identity, unsigned* flag) {
  nonfinite_check<Check, T> check;
  for (std::size_t o = std::size_t(blockIdx.x) * block_threads + threadIdx.x; o < out_size;
       o += std::size_t(gridDim.x) * block_threads) {
    T acc = identity;
    for (int s = 0; s < chunks; ++s) acc = Op::combine(acc, partials[std::size_t(s) * out_size + o]);
    const T r = Op::finish(acc, count);
    out[o] = r;
    check.add(r);
  }
  check.flush(flag);
}

}  // namespace symflow::cuda::dev
