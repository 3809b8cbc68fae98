#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <type_traits>
#include <utility>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "../../core/aligned_buffer.hpp"
#include "../../ops/packet_math.hpp"
#include "../numerics.hpp"
#include "frame.hpp"
#include "stream_store.hpp"
#include "../../core/parallel.hpp"

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

// An expression whose packet is a long dependency chain (it contains a transcendental op: those
// declare `costly`) is computed four packets per step, so that the core overlaps four chains
// (docs/benchmarks.md, "Model-block patterns"); cheap maps are bound by memory and stay one
// packet a step, which also keeps their code, and compile time, small.
template <class E>
inline constexpr bool latency_bound_v = requires { requires E::latency_bound; };

template <class T, class E>
inline constexpr bool packet_path = E::vectorizable && std::is_same_v<typename E::value_type, T> &&
                                    std::is_floating_point_v<T>;

}  // namespace detail

// Outputs of at least this many bytes are written with streaming stores (when the packet type has
// them): about the size of a last-level cache slice, so the output could not stay cached for its
// consumer anyway. Define SYMFLOW_STREAMING_STORE_BYTES to change it (SIZE_MAX turns them off).
#if defined(SYMFLOW_STREAMING_STORE_BYTES)
inline constexpr std::size_t streaming_store_bytes = SYMFLOW_STREAMING_STORE_BYTES;
#else
inline constexpr std::size_t streaming_store_bytes = std::size_t(16) << 20;
#endif

// The NaN/Inf detection rides in every fused map (check_numerics reads its answer when switched on).
// Defining SYMFLOW_FUSED_NUMERICS_CHECK=0 takes it out of the loops, to measure what it costs
// (bench_check_numerics_nofused); check_numerics then scans outputs instead.
#if defined(SYMFLOW_FUSED_NUMERICS_CHECK)
inline constexpr bool fused_numerics_check = SYMFLOW_FUSED_NUMERICS_CHECK != 0;
#else
inline constexpr bool fused_numerics_check = true;
#endif

// One pass over the frame computing every element of a fused elementwise group into `out`
// (dense, row-major). SIMD where every node of the group has a packet form, threads for large frames.
// Returns whether every element written is finite (for check_numerics: x - x is NaN exactly when x
// is not finite, and one bitwise or per packet keeps the answer while the values are in registers).
// Intermediates whose answer no one reads pass WantFinite = false (and always get true).
template <class T, class E, bool WantFinite = true>
bool run_map(const E& root_in, frame f, T* out) {
  if (f.size() == 0) return true;
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
  bool stream = false;
  if constexpr (vec)
    stream = decltype(detail::stream_store(std::declval<T*>(), std::declval<const simd::packet_t<T>&>()))::value &&
             f.size() * sizeof(T) >= streaming_store_bytes;
  // Thread ranges are moved to where a single-threaded pass switches between packets: a multiple
  // of the packet width within the row, or inside the row's scalar tail. Each element is then
  // computed the same way (packet or scalar) whatever the thread count, so results are identical.
  const std::size_t packet_end = inner / width * width;
  const auto snap = [&](std::size_t p) {
    const std::size_t r = p % inner;
    return r < packet_end ? p - r % width : p;
  };
  std::atomic<bool> nonfinite{false};
  parallel_chunks(f.size(), width, [&](std::size_t, std::size_t begin, std::size_t end) {
    begin = snap(begin);
    end = snap(end);
    if (begin >= end) return;
    [[maybe_unused]] T finite_scalar = T(0);
    [[maybe_unused]] auto finite_packet = [] {
      if constexpr (vec) return simd::pm::pset1<simd::packet_t<T>>(T(0));
      else return T(0);
    }();
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
        // Streaming or not, the same packets are computed; only the store instruction differs (one
        // loop body, so the expression's packet code is instantiated once).
        const bool stream_row = stream && reinterpret_cast<std::uintptr_t>(o + j) % sizeof(P) == 0;
        // `Step` packets at a time: a step's packets are independent, so the core overlaps their
        // dependency chains (detail::latency_bound_v).
        const auto packets = [&]<std::size_t... K>(std::index_sequence<K...>) {
          constexpr std::size_t step = sizeof...(K) * width;
          for (; j + step <= stop; j += step) {
            const P p[] = {local.template packet<P>(j + K * width)...};
            // x - x is +0 (no bits set) for finite x and NaN otherwise: or-ing the bits keeps the
            // answer on a one-cycle chain (an add chain bounded in-cache passes at 4 cycles a packet).
            if constexpr (WantFinite && fused_numerics_check)
              ((finite_packet = simd::pm::por(finite_packet, simd::pm::psub(p[K], p[K]))), ...);
            if constexpr (decltype(detail::stream_store(o, p[0]))::value) {
              if (stream_row) {
                (detail::stream_store(o + j + K * width, p[K]), ...);
                continue;
              }
            }
            (simd::pm::pstoreu(o + j + K * width, p[K]), ...);
          }
        };
        if constexpr (detail::latency_bound_v<E>) packets(std::make_index_sequence<4>{});
        packets(std::make_index_sequence<1>{});
      }
      for (; j < stop; ++j) {
        o[j] = local.scalar(j);
        if constexpr (WantFinite && fused_numerics_check && std::is_floating_point_v<T>) finite_scalar += o[j] - o[j];
      }
      j = 0;
      cursor.next(f);
    }
    if (stream) detail::stream_fence();
    if constexpr (WantFinite && fused_numerics_check && std::is_floating_point_v<T>) {
      if constexpr (vec) finite_scalar += simd::pm::predux(finite_packet);
      if (!(finite_scalar == T(0))) nonfinite.store(true, std::memory_order_relaxed);
    }
  });
  if constexpr (WantFinite && !fused_numerics_check)
    if (check_numerics_enabled() && std::is_floating_point_v<T>)
      for (std::size_t i = 0; i < f.size(); ++i)
        if (!(out[i] - out[i] == T(0))) return false;
  return !nonfinite.load();
}

namespace detail {
// Combines packets [j, end) of `e` (end - j a multiple of 4 packets) with four accumulators that
// start at `identity`. (The packet type is deduced, not named: naming __m512 & co. as template
// arguments warns about their attributes.)
template <class T, class E, class P, class Combine, class Reduce>
SYMFLOW_INLINE T combine_packets(const E& e, std::size_t j, std::size_t end, const P& identity, Combine combine,
                                 Reduce reduce) {
  constexpr std::size_t w = simd::packet_size<T>;
  P a0 = identity, a1 = a0, a2 = a0, a3 = a0;
  for (; j < end; j += 4 * w) {
    a0 = combine(a0, e.template packet<P>(j));
    a1 = combine(a1, e.template packet<P>(j + w));
    a2 = combine(a2, e.template packet<P>(j + 2 * w));
    a3 = combine(a3, e.template packet<P>(j + 3 * w));
  }
  return T(reduce(combine(combine(a0, a1), combine(a2, a3))));
}

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
        const std::size_t end = j + (block_end - j) / (4 * w) * (4 * w);
        const P identity = pm::pset1<P>(Op::template identity<T>());
        const auto exact = [&] {
          return combine_packets<T>(e, j, end, identity, [](const P& a, const P& b) { return Op::packet_combine(a, b); },
                                    [](const P& p) { return Op::packet_reduce(p); });
        };
        // Ops whose packet combine has a quicker form that is exact on most inputs (max and min:
        // ops/extremum_rules.hpp) try it first.
        if constexpr (requires { typename Op::unchecked; }) {
          using quick = typename Op::unchecked;
          // One exactness test per four packets, off the accumulators' dependency chains.
          P a0 = identity, a1 = a0, a2 = a0, a3 = a0, exact_so_far = pm::ptrue(identity);
          for (std::size_t i = j; i < end; i += 4 * w) {
            const P p0 = e.template packet<P>(i), p1 = e.template packet<P>(i + w);
            const P p2 = e.template packet<P>(i + 2 * w), p3 = e.template packet<P>(i + 3 * w);
            a0 = quick::combine(a0, p0);
            a1 = quick::combine(a1, p1);
            a2 = quick::combine(a2, p2);
            a3 = quick::combine(a3, p3);
            exact_so_far = pm::pand(exact_so_far, quick::exact_lanes(p0, p1, p2, p3));
          }
          part = T(quick::reduce(quick::combine(quick::combine(a0, a1), quick::combine(a2, a3))));
          if (pm::predux_any(pm::pandnot(pm::ptrue(exact_so_far), exact_so_far)) || !quick::result_exact(part))
            part = exact();
        } else {
          part = exact();
        }
        j = end;
      }
    }
    // The scalar elements (all of a row shorter than four packets): max and min take the quick
    // combine here too, whose select compiles without a branch; the exact combine's branches
    // mispredicted at every new running maximum of random data (three per row of ten).
    if constexpr (requires { typename Op::unchecked; } && std::is_floating_point_v<T>) {
      using quick = typename Op::unchecked;
      const std::size_t from = j;
      T q = Op::template identity<T>();
      bool no_nan = true;
      for (; j < block_end; ++j) {
        const T v = T(e.scalar(j));
        no_nan &= v == v;
        q = quick::combine_scalar(q, v);
      }
      if (no_nan && quick::result_exact(q)) part = Op::combine(part, q);
      else
        for (j = from; j < block_end; ++j) part = Op::combine(part, T(e.scalar(j)));
    } else {
      for (; j < block_end; ++j) part = Op::combine(part, T(e.scalar(j)));
    }
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
      // Reducing over outer axes adds one row at a time into each output. Rows are summed in blocks
      // of block_rows into a scratch copy of the output, folded into dst after each block, so float
      // error grows with block_rows + rows / block_rows instead of with the row count.
      constexpr std::size_t block_rows = 256;
      std::array<T, 1024> small_block;
      aligned_buffer<T> large_block;
      T* block = nullptr;
      if (!reduce_inner && (end - begin) / std::max<std::size_t>(inner, 1) > block_rows) {
        block = out_size <= small_block.size() ? small_block.data() : (large_block = aligned_buffer<T>(out_size)).data();
        std::fill_n(block, out_size, identity);
      }
      std::size_t rows_in_block = 0;
      const auto fold_block = [&] {
        for (std::size_t k = 0; k < out_size; ++k) {
          dst[k] = Op::combine(dst[k], block[k]);
          block[k] = identity;
        }
        rows_in_block = 0;
      };
      E local = operand;
      row_cursor cursor;
      cursor.seek(f, begin / inner);
      std::size_t j = begin % inner;
      while (begin < end) {
        local.set_row(f, cursor);
        const std::size_t stop = std::min(inner, j + (end - begin));
        T* o = (block ? block : dst) + cursor.offset(f, out_strides);
        if (block && ++rows_in_block == block_rows) fold_block();
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
      if (block) fold_block();
    });
    if (threads > 1)
      for (std::size_t t = 0; t < threads; ++t)
        for (std::size_t k = 0; k < out_size; ++k) out[k] = Op::combine(out[k], partials[t * out_size + k]);
  }
  for (std::size_t k = 0; k < out_size; ++k) out[k] = Op::finish(out[k], reduced_count);
}

}  // namespace symflow::cpu
