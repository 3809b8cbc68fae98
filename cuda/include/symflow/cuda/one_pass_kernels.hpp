#pragma once
// The one-pass kernels: several outputs over one frame in a single pass (a loss and its gradients),
// elementwise outputs stored per element and full reductions folded into per-block partials, then a
// small kernel finishing each reduction in a fixed order. Launched by run_one_pass
// (one_pass_launch.hpp).
#include "device_code.hpp"
#if !defined(SYMFLOW_CUDA_DEVICE_CODE)
#error "symflow/cuda/one_pass_kernels.hpp holds CUDA kernels: include <symflow/cuda.hpp> from a .cu file compiled by nvcc, or define SYMFLOW_CUDA_HOST_EMULATION"
#endif
#include <cuda_runtime.h>

#include <cstddef>
#include <tuple>
#include <utility>

#include "device.hpp"
#include "kernel_primitives.hpp"

namespace symflow::cuda::dev {

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

}  // namespace symflow::cuda::dev
