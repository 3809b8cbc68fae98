#pragma once
#include <array>
#include <type_traits>

#include "../../core/aligned_buffer.hpp"
#include "../../ops/packet_math.hpp"
#include "frame.hpp"
#include "parallel.hpp"

namespace symflow::cpu {

namespace detail {
template <class E>
std::size_t gather_stride_arrays(E& root, frame_strides& extra, std::array<frame_strides*, 64>& arrays,
                                 bool& overflow) {
  std::size_t count = 0;
  arrays[count++] = &extra;
  root.visit_strides([&](frame_strides& s) {
    if (count < arrays.size()) arrays[count++] = &s;
    else overflow = true;
  });
  return count;
}

template <class T, class E>
inline constexpr bool packet_path = E::vectorizable && std::is_same_v<typename E::value_type, T> &&
                                    std::is_floating_point_v<T>;
}  // namespace detail

// One pass over the frame computing every element of a fused elementwise group into `out`
// (dense, row-major). SIMD where every node of the group has a packet form, threads for large frames.
template <class T, class E>
void run_map(const E& root_in, frame f, T* out) {
  if (f.size() == 0) return;
  E root = root_in;
  root.bind_frame(f);
  frame_strides out_strides{};
  for (std::size_t i = f.rank, acc = 1; i-- > 0;) {
    out_strides[i] = acc;
    acc *= f.extents[i];
  }
  std::array<frame_strides*, 64> arrays{};
  bool overflow = false;
  const std::size_t count = detail::gather_stride_arrays(root, out_strides, arrays, overflow);
  if (!overflow) collapse(f, arrays.data(), count);

  constexpr bool vec = detail::packet_path<T, E>;
  constexpr std::size_t width = vec ? std::size_t(simd::packet_size<T>) : 1;
  const std::size_t inner = f.inner();
  parallel_ranges(f.size(), width, [&](std::size_t, std::size_t begin, std::size_t end) {
    if (begin >= end) return;
    E local = root;
    row_cursor cursor;
    cursor.seek(f, begin / inner);
    std::size_t j = begin % inner;
    while (begin < end) {
      local.set_row(f, cursor);
      const std::size_t stop = std::min(inner, j + (end - begin));
      T* o = out + cursor.offset(f, out_strides);
      begin += stop - j;
      if constexpr (vec) {
        using P = simd::packet_t<T>;
        for (; j + width <= stop; j += width) simd::pm::pstoreu(o + j, local.template packet<P>(j));
      }
      for (; j < stop; ++j) o[j] = local.scalar(j);
      j = 0;
      cursor.next(f);
    }
  });
}

namespace detail {
// Reduces row elements [j, stop) of a fused group. Blocks of 4096 are summed with four packet
// accumulators and then folded, which keeps float sums accurate over millions of elements.
template <class Op, class T, class E>
SYMFLOW_INLINE T reduce_row(const E& e, std::size_t j, std::size_t stop) {
  T total = Op::template identity<T>();
  constexpr std::size_t block = 4096;
  while (j < stop) {
    const std::size_t block_end = std::min(stop, j + block);
    T part = Op::template identity<T>();
    if constexpr (packet_path<T, E>) {
      using P = simd::packet_t<T>;
      namespace pm = simd::pm;
      constexpr std::size_t w = simd::packet_size<T>;
      if (j + 4 * w <= block_end) {
        P a0 = pm::pset1<P>(part), a1 = a0, a2 = a0, a3 = a0;
        for (; j + 4 * w <= block_end; j += 4 * w) {
          a0 = Op::packet_combine(a0, e.template packet<P>(j));
          a1 = Op::packet_combine(a1, e.template packet<P>(j + w));
          a2 = Op::packet_combine(a2, e.template packet<P>(j + 2 * w));
          a3 = Op::packet_combine(a3, e.template packet<P>(j + 3 * w));
        }
        part = Op::packet_reduce(Op::packet_combine(Op::packet_combine(a0, a1), Op::packet_combine(a2, a3)));
      }
    }
    for (; j < block_end; ++j) part = Op::combine(part, T(e.scalar(j)));
    total = Op::combine(total, part);
  }
  return total;
}
}  // namespace detail

// One pass over the operand's frame accumulating into `out` (dense, the reduced extents), where
// out_strides maps frame coordinates to output offsets (0 along reduced axes). The operand's
// elementwise work is fused: no temporary holds it. Large frames use one partial result per thread.
template <class Op, class T, class E>
void run_reduce(const E& operand_in, frame f, frame_strides out_strides, T* out, std::size_t out_size,
                std::size_t reduced_count) {
  const T identity = Op::template identity<T>();
  std::fill_n(out, out_size, identity);
  if (f.size() != 0) {
    E operand = operand_in;
    operand.bind_frame(f);
    std::array<frame_strides*, 64> arrays{};
    bool overflow = false;
    const std::size_t count = detail::gather_stride_arrays(operand, out_strides, arrays, overflow);
    if (!overflow) collapse(f, arrays.data(), count);

    const std::size_t inner = f.inner(), total = f.size();
    const bool reduce_inner = out_strides[f.rank - 1] == 0;
    const std::size_t threads = total < parallel_threshold ? 1 : std::size_t(max_threads());
    std::array<T, 1024> small_partials{};
    aligned_buffer<T> large_partials;
    T* partials = out;
    if (threads > 1) {
      if (threads * out_size <= small_partials.size()) {
        partials = small_partials.data();
      } else {
        large_partials = aligned_buffer<T>(threads * out_size);
        partials = large_partials.data();
      }
      std::fill_n(partials, threads * out_size, identity);
    }
    constexpr bool vec = detail::packet_path<T, E>;
    constexpr std::size_t width = vec ? std::size_t(simd::packet_size<T>) : 1;
    parallel_ranges(total, width, [&](std::size_t thread, std::size_t begin, std::size_t end) {
      if (begin >= end) return;
      T* dst = threads > 1 ? partials + thread * out_size : out;
      E local = operand;
      row_cursor cursor;
      cursor.seek(f, begin / inner);
      std::size_t j = begin % inner;
      while (begin < end) {
        local.set_row(f, cursor);
        const std::size_t stop = std::min(inner, j + (end - begin));
        T* o = dst + cursor.offset(f, out_strides);
        begin += stop - j;
        if (reduce_inner) {
          *o = Op::combine(*o, detail::reduce_row<Op, T>(local, j, stop));
        } else {
          if constexpr (vec) {
            using P = simd::packet_t<T>;
            namespace pm = simd::pm;
            for (; j + width <= stop; j += width)
              pm::pstoreu(o + j, Op::packet_combine(pm::ploadu<P>(o + j), local.template packet<P>(j)));
          }
          for (; j < stop; ++j) o[j] = Op::combine(o[j], T(local.scalar(j)));
        }
        j = 0;
        cursor.next(f);
      }
    });
    if (threads > 1)
      for (std::size_t t = 0; t < threads; ++t)
        for (std::size_t k = 0; k < out_size; ++k) out[k] = Op::combine(out[k], partials[t * out_size + k]);
  }
  for (std::size_t k = 0; k < out_size; ++k) out[k] = Op::finish(out[k], reduced_count);
}

}  // namespace symflow::cpu
