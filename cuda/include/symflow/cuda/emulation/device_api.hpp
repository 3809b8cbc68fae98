#pragma once
// The names device code uses — threadIdx and friends, __syncthreads, the warp shuffles and votes,
// atomics, the bit casts — for device code compiled by the host compiler against the emulator
// (executor.hpp). They are CUDA's names in the global namespace, as nvcc provides them, so the
// backend's kernels compile unchanged; only a launch is written `launch(...)` instead of `<<<>>>`.
// Include it instead of <cuda_runtime.h>'s device half, never together with nvcc.
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <source_location>
#include <tuple>
#include <type_traits>

#include "executor.hpp"

#if defined(__CUDACC__)
#error "symflow/cuda/emulation/device_api.hpp is for host compilers: nvcc has the real device API"
#endif

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
// One copy per kernel instantiation and host thread, shared by the fibers of the block that runs:
// each block runs on a fresh host thread (executor.hpp), so it starts zeroed.
#define __shared__ static thread_local

#define threadIdx (::symflow::cuda::emulation::thread_index)
#define blockIdx (::symflow::cuda::emulation::block_index)
#define blockDim (::symflow::cuda::emulation::block_dim)
#define gridDim (::symflow::cuda::emulation::grid_dim)
inline constexpr int warpSize = 32;

using dim3 = ::symflow::cuda::emulation::dim3;

namespace symflow::cuda::emulation::device_detail {
template <class T>
std::uint64_t bits_of(const T& v) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8, "a warp shuffle moves values of at most 8 bytes");
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <class T>
T from_bits(std::uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));  // poison (all ones) stays all ones in the low bytes
  return v;
}
template <class T>
T shuffle(warp_op op, unsigned mask, T v, int arg, int width) {
  return from_bits<T>(running().warp_exchange(op, mask, bits_of(v), arg, width));
}
}  // namespace symflow::cuda::emulation::device_detail

// The call site tells barriers apart: threads waiting at two different __syncthreads is an error.
inline void __syncthreads(std::source_location site = std::source_location::current()) {
  ::symflow::cuda::emulation::running().barrier(site);
}
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  ::symflow::cuda::emulation::running().warp_exchange(::symflow::cuda::emulation::warp_op::sync, mask, 0, 0, 32);
}
inline unsigned __activemask() { return ::symflow::cuda::emulation::running().active_lanes(); }

template <class T>
T __shfl_sync(unsigned mask, T v, int src_lane, int width = 32) {
  return ::symflow::cuda::emulation::device_detail::shuffle(::symflow::cuda::emulation::warp_op::shfl, mask, v, src_lane, width);
}
template <class T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return ::symflow::cuda::emulation::device_detail::shuffle(::symflow::cuda::emulation::warp_op::shfl_up, mask, v, int(delta), width);
}
template <class T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return ::symflow::cuda::emulation::device_detail::shuffle(::symflow::cuda::emulation::warp_op::shfl_down, mask, v, int(delta), width);
}
template <class T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  return ::symflow::cuda::emulation::device_detail::shuffle(::symflow::cuda::emulation::warp_op::shfl_xor, mask, v, lane_mask, width);
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  return unsigned(::symflow::cuda::emulation::running().warp_exchange(::symflow::cuda::emulation::warp_op::ballot, mask,
                                                                     predicate != 0, 0, 32));
}
inline int __any_sync(unsigned mask, int predicate) {
  return int(::symflow::cuda::emulation::running().warp_exchange(::symflow::cuda::emulation::warp_op::any, mask,
                                                                predicate != 0, 0, 32));
}
inline int __all_sync(unsigned mask, int predicate) {
  return int(::symflow::cuda::emulation::running().warp_exchange(::symflow::cuda::emulation::warp_op::all, mask,
                                                                predicate != 0, 0, 32));
}

// Atomics return the old value, as CUDA's do; std::atomic_ref keeps them atomic should blocks ever
// run on several host threads.
template <class T>
T atomicAdd(T* address, T value) {
  return std::atomic_ref<T>(*address).fetch_add(value);
}
template <class T>
T atomicSub(T* address, T value) {
  return std::atomic_ref<T>(*address).fetch_sub(value);
}
template <class T>
T atomicOr(T* address, T value) {
  return std::atomic_ref<T>(*address).fetch_or(value);
}
template <class T>
T atomicAnd(T* address, T value) {
  return std::atomic_ref<T>(*address).fetch_and(value);
}
template <class T>
T atomicExch(T* address, T value) {
  return std::atomic_ref<T>(*address).exchange(value);
}
template <class T>
T atomicCAS(T* address, T compare, T value) {
  std::atomic_ref<T>(*address).compare_exchange_strong(compare, value);
  return compare;  // the old value either way
}
template <class T>
T atomicMax(T* address, T value) {
  std::atomic_ref<T> a(*address);
  T old = a.load();
  while (old < value && !a.compare_exchange_weak(old, value)) {
  }
  return old;
}
template <class T>
T atomicMin(T* address, T value) {
  std::atomic_ref<T> a(*address);
  T old = a.load();
  while (value < old && !a.compare_exchange_weak(old, value)) {
  }
  return old;
}

inline float __int_as_float(int v) { return std::bit_cast<float>(v); }
inline int __float_as_int(float v) { return std::bit_cast<int>(v); }
inline unsigned __float_as_uint(float v) { return std::bit_cast<unsigned>(v); }
inline float __uint_as_float(unsigned v) { return std::bit_cast<float>(v); }
inline double __longlong_as_double(long long v) { return std::bit_cast<double>(v); }
inline long long __double_as_longlong(double v) { return std::bit_cast<long long>(v); }

namespace symflow::cuda::emulation {
// kernel<<<grid, block>>>(args...) written launch("kernel", kernel, grid, block, args...): the
// arguments are copied, as a launch copies them, and every thread of every block runs the kernel.
template <class... P, class... A>
void launch(const char* name, void (*kernel)(P...), dim3 grid, dim3 block, A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A), "launch: the kernel takes another number of arguments");
  std::tuple<std::remove_cvref_t<P>...> copied(std::forward<A>(args)...);
  const std::function<void()> body = [&] { std::apply(kernel, copied); };
  grid_executor executor;
  executor.run(name, grid, block, body);
}
}  // namespace symflow::cuda::emulation
