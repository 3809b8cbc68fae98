#pragma once
// What a generated pass (pass_codegen.hpp) includes besides the op files: the SIMD packet types, the
// lane-by-lane application of an op that has no packet function for the pass's dtype, and streaming
// stores for large outputs.
#include <cstddef>
#include <cstdint>
#include <utility>

#include "../eval/cpu/stream_store.hpp"
#include "../ops/packet_math.hpp"

namespace symflow::pass_support {

// The op's scalar function on each lane, as the interpreter's tile kernel applies it to every element
// when the op has no packet function.
template <class Op, class T, class... P>
simd::packet_t<T> lanewise(const P&... x) {
  constexpr std::size_t width = simd::packet_size<T>;
  alignas(64) T lanes[sizeof...(P) + 1][width];
  std::size_t k = 0;
  ((simd::pm::pstoreu(lanes[k++], x)), ...);
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    for (std::size_t l = 0; l < width; ++l) lanes[sizeof...(P)][l] = static_cast<T>(Op::apply(lanes[I][l]...));
  }(std::index_sequence_for<P...>{});
  return simd::pm::ploadu<simd::packet_t<T>>(lanes[sizeof...(P)]);
}

// A packet written with a streaming store where the address allows one (a multiple of the packet's
// size, as the interpreter's tiles start on the packet grid), else an ordinary store: the same bits.
template <class T, class P>
void store_streaming(T* to, const P& p) {
  if constexpr (decltype(cpu::detail::stream_store(to, p))::value) {
    if (reinterpret_cast<std::uintptr_t>(to) % sizeof(P) == 0) {
      cpu::detail::stream_store(to, p);
      return;
    }
  }
  simd::pm::pstoreu(to, p);
}

}  // namespace symflow::pass_support
