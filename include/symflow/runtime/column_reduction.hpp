#pragma once
// Reductions over every axis but the last — a bias's gradient is the column sums of a
// [rows, width] array — in one fixed order: each column's rows are combined in order within
// blocks of column_block_rows(rows) rows, starting from the identity, then the blocks' results in
// order. The order depends on the row count alone. The reduction's own unit (reduce_typed, threads
// taking columns) and a fused pass computing it on its tiles (fused_pass.hpp, threads taking whole
// blocks of rows) both follow it, so they give the same bits, on any thread count. Floating sums
// accumulate in double, as every interpreter reduction whose order matters does.
#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "../core/dtype.hpp"
#include "../expr/reduction.hpp"

namespace symflow {

namespace runtime_detail {

// At most 64 blocks (a pass keeps one row of partial results per block), of at least 16 rows.
inline constexpr std::size_t column_block_count_max = 64;
inline std::size_t column_block_rows(std::size_t rows) {
  return std::max<std::size_t>(16, (rows + column_block_count_max - 1) / column_block_count_max);
}
// A pass's accumulators take this many bytes per column, whatever their type (at most a double).
inline constexpr std::size_t column_accumulator_bytes = 8;
inline std::size_t column_blocks(std::size_t rows) {
  const std::size_t b = column_block_rows(rows);
  return (rows + b - 1) / b;
}

// What the interpreter's reductions of T by Op accumulate in: double for floating reductions whose
// order matters (sums, means, products), else T.
template <class Op, class T>
using reduction_accumulator_t = std::conditional_t<std::is_floating_point_v<T> && !order_independent_v<Op>, double, T>;

// acc[j] = combine(acc[j], x[r][j]) for the rows r of x in order, over the columns [j0, j1) of
// rows of `count` elements. Two rows per sweep: each accumulator loaded and stored once for both
// (the same operations in the same order; a quarter faster for a tile's two rows of 256).
template <class Op, class Acc, class T>
void add_rows_to_columns(Acc* acc, const T* x, std::size_t rows, std::size_t count, std::size_t j0, std::size_t j1) {
  std::size_t r = 0;
  for (; r + 2 <= rows; r += 2) {
    const T* a = x + r * count;
    const T* b = a + count;
    for (std::size_t j = j0; j < j1; ++j) acc[j] = Op::combine(Op::combine(acc[j], Acc(a[j])), Acc(b[j]));
  }
  for (; r < rows; ++r) {
    const T* row = x + r * count;
    for (std::size_t j = j0; j < j1; ++j) acc[j] = Op::combine(acc[j], Acc(row[j]));
  }
}

// The columns [j0, j1) of `rows` contiguous rows of `count` reduced in the order above into
// total[j0..j1) (which starts at the identity); `part` is scratch of `count` accumulators.
template <class Op, class Acc, class T>
void reduce_columns_in_blocks(const T* x, std::size_t rows, std::size_t count, std::size_t j0, std::size_t j1, Acc* total,
                              Acc* part) {
  const std::size_t block = column_block_rows(rows);
  for (std::size_t r0 = 0; r0 < rows; r0 += block) {
    std::fill(part + j0, part + j1, Op::template identity<Acc>());
    add_rows_to_columns<Op>(part, x + r0 * count, std::min(block, rows - r0), count, j0, j1);
    for (std::size_t j = j0; j < j1; ++j) total[j] = Op::combine(total[j], part[j]);
  }
}

}  // namespace runtime_detail

// The three steps of the order above as a fused pass runs them, for the operand's dtype: a row of
// accumulators (8 bytes per column, whatever the accumulator's type) starts at the identity, takes
// whole rows of one block, and the blocks' rows are combined and finished into the result.
struct column_reduction_functions {
  void (*start)(dtype type, void* acc, std::size_t count) = nullptr;
  void (*add_rows)(dtype type, void* acc, const void* rows_data, std::size_t rows, std::size_t count) = nullptr;
  // `partials`: `blocks` rows of `count` accumulators in block order, each row
  // count * column_accumulator_bytes bytes after the last; `rows`: the reduced count.
  void (*finish)(dtype type, const void* partials, std::size_t blocks, std::size_t count, std::size_t rows,
                 void* out) = nullptr;
};

namespace runtime_detail {
template <class Op>
column_reduction_functions column_reduction_functions_of() {
  column_reduction_functions f;
  f.start = [](dtype type, void* acc, std::size_t count) {
    visit_compute_dtype(type, [&](auto t) {
      using T = decltype(t);
      if constexpr (!std::is_same_v<T, bool>) {
        using Acc = reduction_accumulator_t<Op, T>;
        std::fill_n(static_cast<Acc*>(acc), count, Op::template identity<Acc>());
      }
    });
  };
  f.add_rows = [](dtype type, void* acc, const void* rows_data, std::size_t rows, std::size_t count) {
    visit_compute_dtype(type, [&](auto t) {
      using T = decltype(t);
      if constexpr (!std::is_same_v<T, bool>)
        add_rows_to_columns<Op>(static_cast<reduction_accumulator_t<Op, T>*>(acc), static_cast<const T*>(rows_data), rows,
                                count, 0, count);
    });
  };
  f.finish = [](dtype type, const void* partials, std::size_t blocks, std::size_t count, std::size_t rows, void* out) {
    visit_compute_dtype(type, [&](auto t) {
      using T = decltype(t);
      if constexpr (!std::is_same_v<T, bool>) {
        using Acc = reduction_accumulator_t<Op, T>;
        static_assert(sizeof(Acc) <= column_accumulator_bytes);
        const auto* p = static_cast<const unsigned char*>(partials);
        const std::size_t row_bytes = count * column_accumulator_bytes;
        T* o = static_cast<T*>(out);
        for (std::size_t j = 0; j < count; ++j) {
          Acc total = Op::template identity<Acc>();
          for (std::size_t b = 0; b < blocks; ++b)
            total = Op::combine(total, reinterpret_cast<const Acc*>(p + b * row_bytes)[j]);
          o[j] = static_cast<T>(Op::finish(total, rows));
        }
      }
    });
  };
  return f;
}
}  // namespace runtime_detail

}  // namespace symflow
