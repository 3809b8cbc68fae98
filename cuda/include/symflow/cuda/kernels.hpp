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
#include <tuple>
#include <type_traits>
#include <utility>

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

// ---- several outputs over one frame in one pass (a loss and its gradients) -------------------

// Members of a one-pass group: an elementwise output written per element, or a reduction over the
// whole frame that each block folds into one partial.
template <class Ev, class T>
struct map_member {
  static constexpr bool reduces = false;
  Ev ev;
  T* out;
};
template <class Op, class Ev>
struct reduce_member {
  static constexpr bool reduces = true;
  using op_type = Op;
  Ev ev;
};

// One value per reduction member (kernel arguments and per-thread accumulators).
template <class T, int R>
struct reduce_slots {
  T v[R > 0 ? R : 1];
};

// The reduction slot of member I: how many reduction members precede it.
template <std::size_t I, class... M>
constexpr int slot_of() {
  constexpr bool reduces[] = {M::reduces..., false};
  int s = 0;
  for (std::size_t k = 0; k < I; ++k) s += reduces[k];
  return s;
}
template <class... M>
constexpr int reduce_count() {
  return (int(M::reduces) + ... + 0);
}

template <class T, int V, bool Check, class... M>
struct one_pass_step {
  static constexpr int R = reduce_count<M...>();
  using check_t = nonfinite_check<Check, T>;
  // Every member's values at [i, i + V) are computed before any is stored: an output may overwrite
  // an input that other members read at the same index (an in-place parameter update).
  // (Maps' stored values feed `check`; reductions are checked by the finishing kernel.)
  template <class Env, std::size_t... K>
  static SYMFLOW_DEVICE void dense(const pack<M...>& m, const Env& env, std::size_t i, reduce_slots<T, R>& acc,
                                   check_t& check, std::index_sequence<K...>) {
    const auto values = make_pack(get<K>(m).ev.template vec_at<V>(env, i)...);
    (take_vec<K>(get<K>(m), get<K>(values), i, acc, check), ...);
  }
  template <class Env, std::size_t... K>
  static SYMFLOW_DEVICE void flat(const pack<M...>& m, const Env& env, std::size_t i, reduce_slots<T, R>& acc,
                                  check_t& check, std::index_sequence<K...>) {
    const auto values = make_pack(T(get<K>(m).ev.flat(env, i))...);
    (take_one<K>(get<K>(m), get<K>(values), i, acc, check), ...);
  }
  template <class Env, class Crd, std::size_t... K>
  static SYMFLOW_DEVICE void strided(const pack<M...>& m, const Env& env, const Crd& c, std::size_t i,
                                     reduce_slots<T, R>& acc, check_t& check, std::index_sequence<K...>) {
    const auto values = make_pack(T(get<K>(m).ev.at(env, c))...);
    (take_one<K>(get<K>(m), get<K>(values), i, acc, check), ...);
  }
  template <std::size_t K, class Member>
  static SYMFLOW_DEVICE void take_vec(const Member& member, const vec<T, V>& x, std::size_t i, reduce_slots<T, R>& acc,
                                      check_t& check) {
    if constexpr (Member::reduces) {
      constexpr int s = slot_of<K, M...>();
#pragma unroll
      for (int k = 0; k < V; ++k) acc.v[s] = Member::op_type::combine(acc.v[s], x.v[k]);
    } else {
      store_vec<T, V>(member.out + i, x);
      check.add(x);
    }
  }
  template <std::size_t K, class Member>
  static SYMFLOW_DEVICE void take_one(const Member& member, T x, std::size_t i, reduce_slots<T, R>& acc,
                                      check_t& check) {
    if constexpr (Member::reduces) {
      constexpr int s = slot_of<K, M...>();
      acc.v[s] = Member::op_type::combine(acc.v[s], x);
    } else {
      member.out[i] = x;
      check.add(x);
    }
  }
  // The block's partial of each reduction member, written to partials[slot * gridDim.x + block].
  template <std::size_t... K>
  static SYMFLOW_DEVICE void block_partials(reduce_slots<T, R>& acc, const reduce_slots<T, R>& identity, T* partials,
                                            std::index_sequence<K...>) {
    (block_partial<K, std::tuple_element_t<K, std::tuple<M...>>>(acc, identity, partials), ...);
  }
  template <std::size_t K, class Member>
  static SYMFLOW_DEVICE void block_partial(reduce_slots<T, R>& acc, const reduce_slots<T, R>& identity, T* partials) {
    if constexpr (Member::reduces) {
      using Op = typename Member::op_type;
      constexpr int s = slot_of<K, M...>();
      __shared__ T warp_results[block_threads / 32];
      T v = warp_reduce<Op>(acc.v[s]);
      if ((threadIdx.x & 31) == 0) warp_results[threadIdx.x >> 5] = v;
      __syncthreads();
      if (threadIdx.x < 32) {
        v = threadIdx.x < block_threads / 32 ? warp_results[threadIdx.x] : identity.v[s];
        v = warp_reduce<Op>(v);
        if (threadIdx.x == 0) partials[std::size_t(s) * gridDim.x + blockIdx.x] = v;
      }
      __syncthreads();
    }
  }
};

// Dense: every member reads its leaves with stride 1 (or as scalars) and writes dense outputs, so a
// thread takes V consecutive elements with vector loads; the grid strides over the frame.
// R (the number of reduction members) is spelled out rather than computed in the parameter types:
// nvcc copies the spelling of a kernel's parameter types into its host stub.
template <class T, class Env, int V, int R, bool Check, class... M>
__global__ void __launch_bounds__(block_threads) one_pass_dense_kernel(const pack<M...> m, const Env env, std::size_t n,
                                                                       T* partials, const reduce_slots<T, R> identity,
                                                                       unsigned* flag) {
  using step = one_pass_step<T, V, Check, M...>;
  static_assert(step::R == R);
  reduce_slots<T, step::R> acc = identity;
  typename step::check_t check;
  const std::size_t stride = std::size_t(gridDim.x) * block_threads * V;
  for (std::size_t base = (std::size_t(blockIdx.x) * block_threads + threadIdx.x) * V; base < n; base += stride) {
    if (base + V <= n) {
      step::dense(m, env, base, acc, check, std::index_sequence_for<M...>{});
    } else {
      for (std::size_t i = base; i < n; ++i) step::flat(m, env, i, acc, check, std::index_sequence_for<M...>{});
    }
  }
  check.flush(flag);
  if constexpr (step::R > 0) step::block_partials(acc, identity, partials, std::index_sequence_for<M...>{});
}

template <class T, class Env, class I, int FR, int R, bool Check, class... M>
__global__ void __launch_bounds__(block_threads) one_pass_strided_kernel(const pack<M...> m, const Env env,
                                                                         const index_frame<I> f, std::size_t n,
                                                                         T* partials, const reduce_slots<T, R> identity,
                                                                         unsigned* flag) {
  using step = one_pass_step<T, 1, Check, M...>;
  static_assert(step::R == R);
  reduce_slots<T, step::R> acc = identity;
  typename step::check_t check;
  for (std::size_t i = std::size_t(blockIdx.x) * block_threads + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * block_threads)
    step::strided(m, env, decode<I, FR>(I(i), f), i, acc, check, std::index_sequence_for<M...>{});
  check.flush(flag);
  if constexpr (step::R > 0) step::block_partials(acc, identity, partials, std::index_sequence_for<M...>{});
}

// Where the reductions of a one-pass group end: block b combines the partials of reduction slot b in
// a fixed order (deterministic) and applies that op's finish step.
template <class T, int R>
struct reduce_targets {
  T* out[R > 0 ? R : 1];
  std::size_t count[R > 0 ? R : 1];
  T identity[R > 0 ? R : 1];
};
template <class Op, class T, int R, bool Check>
SYMFLOW_DEVICE void finish_slot(int s, const T* partials, int blocks, const reduce_targets<T, R>& t, unsigned* flag) {
  __shared__ T warp_results[block_threads / 32];
  T acc = t.identity[s];
  for (int j = int(threadIdx.x); j < blocks; j += block_threads) acc = Op::combine(acc, partials[std::size_t(s) * blocks + j]);
  acc = warp_reduce<Op>(acc);
  if ((threadIdx.x & 31) == 0) warp_results[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x < 32) {
    acc = threadIdx.x < block_threads / 32 ? warp_results[threadIdx.x] : t.identity[s];
    acc = warp_reduce<Op>(acc);
    if (threadIdx.x == 0) {
      const T r = Op::finish(acc, t.count[s]);
      *t.out[s] = r;
      if constexpr (Check)
        if (!(r - r == T(0))) atomicOr(flag, 1u);
    }
  }
}
template <class T, int R, bool Check, class... Ops, std::size_t... S>
SYMFLOW_DEVICE void finish_slots(const T* partials, int blocks, const reduce_targets<T, R>& t, unsigned* flag,
                                 std::index_sequence<S...>) {
  ((blockIdx.x == S ? finish_slot<Ops, T, R, Check>(int(S), partials, blocks, t, flag) : void()), ...);
}
template <class T, int R, bool Check, class... Ops>
__global__ void __launch_bounds__(block_threads) one_pass_finish_kernel(const T* __restrict__ partials, int blocks,
                                                                        const reduce_targets<T, R> t, unsigned* flag) {
  static_assert(R == int(sizeof...(Ops)));
  finish_slots<T, R, Check, Ops...>(partials, blocks, t, flag, std::index_sequence_for<Ops...>{});
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

// check_numerics of `n` values another path wrote: sets *flag if one is NaN or infinite.
template <class T>
void scan_nonfinite(const T* p, std::size_t n, unsigned* flag, cudaStream_t s) {
  if (n == 0) return;
  nonfinite_scan_kernel<canonical_t<T>><<<grid_for(n, block_threads * 4, 4096), block_threads, 0, s>>>(p, n, flag);
  SYMFLOW_CUDA_CHECK_LAUNCH("nonfinite_scan_kernel");
}

template <class T>
void set_values(T* out, std::size_t n, const small_values<T>& values, cudaStream_t s) {
  if (n == 0) return;
  set_values_kernel<canonical_t<T>><<<1, 32, 0, s>>>(out, n, values);
  SYMFLOW_CUDA_CHECK_LAUNCH("set_values_kernel");
}

}  // namespace symflow::cuda::dev
