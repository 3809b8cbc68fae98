#pragma once
// What every kernel of the evaluator shares: the block size, frame-index decoding, the warp
// reduction and the check_numerics accumulator, plus the grid size of a grid-stride launch. Kept
// apart from the kernels so each kernel family (map, reduce, one-pass, utility) includes only these.
#include "device_code.hpp"
#if !defined(SYMFLOW_CUDA_DEVICE_CODE)
#error "symflow/cuda/kernel_primitives.hpp holds CUDA device code: include <symflow/cuda.hpp> from a .cu file compiled by nvcc, or define SYMFLOW_CUDA_HOST_EMULATION"
#endif
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "device.hpp"

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

// check_numerics inside the kernels that write an evaluation's outputs. `Check` is a template
// parameter: a kernel instantiated without it is the kernel that ran before (the checker is empty and
// its calls vanish). With it, each thread accumulates x - x over the values it stores (0 while they
// are finite, NaN from the first NaN or infinity on: a subtract and an add per element, no branch),
// and at the end of the kernel one vote per warp sets *flag (one atomicOr per warp that saw one).
// flush() must be reached by every thread of the warp (kernels call it last, outside any branch).
template <bool Check, class T>
struct nonfinite_check {
  SYMFLOW_DEVICE void add(T) {}
  template <int V>
  SYMFLOW_DEVICE void add(const vec<T, V>&) {}
  SYMFLOW_DEVICE void flush(unsigned*) const {}
};
template <class T>
struct nonfinite_check<true, T> {
  static_assert(std::is_floating_point_v<T>, "symflow::cuda: check_numerics kernels are for floating-point outputs");
  T acc = T(0);
  SYMFLOW_DEVICE void add(T x) { acc += x - x; }
  template <int V>
  SYMFLOW_DEVICE void add(const vec<T, V>& x) {
#pragma unroll
    for (int k = 0; k < V; ++k) acc += x.v[k] - x.v[k];
  }
  SYMFLOW_DEVICE void flush(unsigned* flag) const {
    const bool bad = !(acc == T(0));
    if (__any_sync(0xffffffffu, bad) && (threadIdx.x & 31) == 0) atomicOr(flag, 1u);
  }
};

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

// Blocks for a grid-stride loop over n items of `per_block` each (capped; the loop covers the rest).
inline unsigned grid_for(std::size_t n, std::size_t per_block, std::size_t cap = std::size_t(1) << 20) {
  const std::size_t b = (n + per_block - 1) / per_block;
  return unsigned(std::max<std::size_t>(1, std::min(b, cap)));
}

}  // namespace symflow::cuda::dev
