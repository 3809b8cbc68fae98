#pragma once
// What a fused pass (fused_pass.hpp) moves besides its ops' results: a stored member copied from its
// tile buffer with streaming stores, a broadcast operand's value repeated along a tile, and how a
// tile of whole rows finds each operand.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "../core/dtype.hpp"
#include "../eval/cpu/fused_loop.hpp"
#include "../ops/packet_math.hpp"

namespace symflow::fused_pass_detail {

// Streaming (non-temporal) stores, as compiled run_map uses them for large outputs: whether this
// target has them for the float packet, and a copy of `bytes` from a tile buffer to `dst` with them
// where dst is packet-aligned (ordinary stores for the unaligned head and the tail). Plain moves, so
// any dtype's bits are copied unchanged. The caller fences (cpu::detail::stream_fence) before the
// values are read by another thread.
using stream_packet = simd::packet_t<float>;
inline constexpr bool can_stream =
    decltype(cpu::detail::stream_store(std::declval<float*>(), std::declval<const stream_packet&>()))::value;

inline void stream_copy(void* dst, const void* src, std::size_t bytes) {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  if constexpr (can_stream) {
    constexpr std::size_t w = sizeof(stream_packet);
    const std::size_t head = std::min(bytes, (w - reinterpret_cast<std::uintptr_t>(d) % w) % w);
    std::memcpy(d, s, head);
    d += head;
    s += head;
    bytes -= head;
    for (; bytes >= w; d += w, s += w, bytes -= w)
      cpu::detail::stream_store(reinterpret_cast<float*>(d),
                                simd::pm::ploadu<stream_packet>(reinterpret_cast<const float*>(s)));
  }
  std::memcpy(d, s, bytes);
}

// A broadcast operand's value repeated along a tile. By element size, not dtype: the bits are
// copied unchanged, and a fixed-size fill is a few vector stores where a memcpy per element cost
// a call each (a fifth of an LN+GELU training step went to them).
template <class Bits>
void fill_bits(void* dst, const void* value, std::size_t n) {
  Bits v;
  std::memcpy(&v, value, sizeof v);
  Bits* d = static_cast<Bits*>(dst);
  std::size_t i = 0;
  // Whole packets where the element is a float's or a double's size, whatever the optimisation
  // level (at -O2 GCC 12 leaves std::fill_n a loop of scalar stores: 4 % of an LN+GELU step).
  // A broadcast and a store move bits, so a NaN's payload is kept.
  using F = std::conditional_t<sizeof(Bits) == sizeof(float), float, double>;
  if constexpr ((sizeof(Bits) == sizeof(float) || sizeof(Bits) == sizeof(double)) && simd::vectorized<F>) {
    using P = simd::packet_t<F>;
    constexpr std::size_t width = simd::packet_size<F>;
    F f;
    std::memcpy(&f, &v, sizeof f);
    const P p = simd::pm::pset1<P>(f);
    for (; i + width <= n; i += width) simd::pm::pstoreu(reinterpret_cast<F*>(d + i), p);
  }
  for (; i < n; ++i) d[i] = v;
}

inline void fill_splat(void* dst, const void* value, dtype type, std::size_t n) {
  const std::size_t esize = dtype_size(type);
  if (esize == 4) return fill_bits<std::uint32_t>(dst, value, n);
  if (esize == 8) return fill_bits<std::uint64_t>(dst, value, n);
  if (esize == 2) return fill_bits<std::uint16_t>(dst, value, n);
  if (esize == 1) return fill_bits<std::uint8_t>(dst, value, n);
  for (std::size_t i = 0; i < n; ++i) std::memcpy(static_cast<char*>(dst) + i * esize, value, esize);
}

// A row of `row` elements (an operand broadcast over the rows) repeated to fill `n` elements, n a
// multiple of row: a tile of whole rows of that operand.
inline void fill_repeated_row(void* dst, const void* row_data, dtype type, std::size_t row, std::size_t n) {
  const std::size_t bytes = row * dtype_size(type);
  for (std::size_t at = 0; at < n * dtype_size(type); at += bytes) std::memcpy(static_cast<char*>(dst) + at, row_data, bytes);
}

// How a pass whose tiles hold whole rows of a [rows, inner] index space finds an input's tile.
enum class row_input : unsigned char {
  contiguous,  // row-major over both axes: a pointer into the input
  repeated,    // one row, the same for every row (a bias): the row copied once per row of a tile
  per_row,     // one value per row (a row's mean): each of the tile's rows filled with its value
};

// Each input's kind from its strides along the two axes (in elements; 0 where it broadcasts), into
// `kinds`; false when an input is none of them (a transposed or strided read). Inputs that are one
// value (`splat_all`) keep whatever kind: the pass fills them once.
inline bool classify_row_inputs(std::size_t inner, const std::vector<std::vector<std::size_t>>& strides,
                                const std::vector<char>& splat_all, std::vector<row_input>& kinds) {
  kinds.assign(strides.size(), row_input::contiguous);
  for (std::size_t k = 0; k < strides.size(); ++k) {
    if (splat_all[k]) continue;
    const std::size_t along_rows = strides[k][0], along_row = strides[k][1];
    if (along_row == 1 && along_rows == inner) kinds[k] = row_input::contiguous;
    else if (along_row == 1 && along_rows == 0) kinds[k] = row_input::repeated;
    else if (along_row == 0) kinds[k] = row_input::per_row;
    else return false;
  }
  return true;
}

}  // namespace symflow::fused_pass_detail
