#pragma once
// The matrix product every CPU path runs (matmul compiled and interpreted): c = alpha a b + beta c
// by Eigen's GEMM, on operands that may be stored row- or column-major — a transposed view of a
// matrix in memory is multiplied where it lies instead of being copied into a row-major one first
// (the weight gradients of a dense layer are x^T g and h^T g).
//
// A header-only program instantiates it where it is used. A program compiled with
// SYMFLOW_SEPARATE_COMPILATION (core/separate_compilation.hpp) declares the float and double
// instances `extern` and gets them from one unit of the library (cmake/library/gemm.cpp), so
// Eigen's GEMM (its packing routines for both layouts) is compiled once instead of in every unit
// that multiplies matrices.
#include <cstddef>
#include <type_traits>
#include <vector>

#include "eigen.hpp"
#include "parallel.hpp"

#include "separate_compilation.hpp"

namespace symflow {

// Element (i, j) at data[i * row_stride + j * column_stride]; one of the strides is 1 (as
// matrix_layout below ensures).
template <class T>
struct strided_matrix {
  T* data = nullptr;
  std::ptrdiff_t rows = 0, columns = 0, row_stride = 0, column_stride = 1;
  bool row_major() const { return column_stride == 1; }
  // Each line (a row if row-major, a column otherwise) starts this many elements after the last.
  std::ptrdiff_t outer_stride() const { return row_major() ? row_stride : column_stride; }
};

// The layout of a rows x columns matrix with the given strides as one the GEMM reads, with the
// strides of axes of extent 1 (which no element steps along) chosen to fit; false when neither
// axis has unit stride, or when lines would overlap (a broadcast).
template <class T>
bool matrix_layout(T* data, std::size_t rows, std::size_t columns, std::size_t row_stride, std::size_t column_stride,
                   strided_matrix<T>& out) {
  out.data = data;
  out.rows = std::ptrdiff_t(rows);
  out.columns = std::ptrdiff_t(columns);
  const auto as = [&](std::size_t rs, std::size_t cs) {
    out.row_stride = std::ptrdiff_t(rs);
    out.column_stride = std::ptrdiff_t(cs);
    return true;
  };
  if (rows == 0 || columns == 0 || (rows == 1 && columns == 1)) return as(columns, 1);  // reads at most one element
  if (rows == 1) {  // one row: the row stride is never stepped along
    if (column_stride == 1) return as(columns, 1);
    return column_stride >= 1 && as(1, column_stride);
  }
  if (columns == 1) {  // one column
    if (row_stride == 1) return as(1, rows);
    return row_stride >= 1 && as(row_stride, 1);
  }
  if (column_stride == 1 && row_stride >= columns) return as(row_stride, 1);
  if (row_stride == 1 && column_stride >= rows) return as(1, column_stride);
  return false;
}

// Which layouts the product reads as they lie. A program compiled with separate compilation gets
// Eigen's GEMM for all four pairs of row- and column-major operands, compiled once in the library.
// A header-only program instantiates it in each unit that multiplies matrices, where the four pairs
// cost about 6 s of g++ more than one: there a column-major operand is copied row-major first (the
// same products, bit for bit).
#if defined(SYMFLOW_SEPARATE_COMPILATION)
inline constexpr bool gemm_reads_every_layout = true;
#else
inline constexpr bool gemm_reads_every_layout = false;
#endif

namespace detail {
template <class T>
strided_matrix<const T> row_major_copy(const strided_matrix<const T>& m, std::vector<std::remove_const_t<T>>& copy) {
  if (m.row_major()) return m;
  copy.resize(std::size_t(m.rows) * std::size_t(m.columns));
  for (std::ptrdiff_t i = 0; i < m.rows; ++i)
    for (std::ptrdiff_t j = 0; j < m.columns; ++j) copy[std::size_t(i * m.columns + j)] = m.data[i + j * m.column_stride];
  return {copy.data(), m.rows, m.columns, m.columns, 1};
}

// Whether c = a b (depth `depth`) zeroes c with the threads first. Eigen's `c = a b` zeroes c on the
// calling thread and then adds the product in, for every product but the smallest (below
// EIGEN_GEMM_TO_COEFFBASED_THRESHOLD it computes each element directly, which `c += a b` would
// not do the same way: 0 + -0 is +0); a training step's products spent 5-6% of their time in
// that serial zeroing. Zeroing c first and then adding is the same arithmetic.
template <class T>
bool zero_in_parallel(const strided_matrix<T>& c, std::ptrdiff_t depth) {
  return c.rows + c.columns + depth >= EIGEN_GEMM_TO_COEFFBASED_THRESHOLD && depth > 0 &&
         std::size_t(c.rows) * std::size_t(c.columns) >= cpu::parallel_threshold && cpu::max_threads() > 1;
}
}  // namespace detail

// c = alpha a b + beta c, c row-major; beta == 0 writes c without reading it. The caller checks
// the extents (a.columns == b.rows, c is a.rows x b.columns).
template <class T>
void gemm(const strided_matrix<T>& c, const strided_matrix<const T>& a, const strided_matrix<const T>& b, T alpha,
          T beta) {
  using row_major = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using column_major = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
  using stride = Eigen::OuterStride<>;
  Eigen::Map<row_major, 0, stride> mc(c.data, c.rows, c.columns, stride(c.row_stride));
  auto with = [&](const auto& ma, const auto& mb) {
    if (beta == T(0) && detail::zero_in_parallel(c, a.columns)) {
      // What Eigen's `c = a b` does for a product this size, with c zeroed by the threads instead
      // of by the calling thread alone while the others wait: the same bits.
      cpu::parallel_ranges(std::size_t(c.rows) * std::size_t(c.columns), std::size_t(c.columns),
                           [&](int, std::size_t begin, std::size_t end) {
                             for (std::size_t r = begin / std::size_t(c.columns); r < end / std::size_t(c.columns); ++r)
                               std::fill_n(c.data + std::ptrdiff_t(r) * c.row_stride, c.columns, T(0));
                           });
      mc.noalias() += (alpha * ma) * mb;
    } else if (beta == T(0)) {
      mc.noalias() = (alpha * ma) * mb;
    } else {
      if (beta != T(1)) mc *= beta;
      mc.noalias() += (alpha * ma) * mb;
    }
  };
  if constexpr (gemm_reads_every_layout) {
    auto with_b = [&](const auto& ma) {
      if (b.row_major())
        with(ma, Eigen::Map<const row_major, 0, stride>(b.data, b.rows, b.columns, stride(b.outer_stride())));
      else
        with(ma, Eigen::Map<const column_major, 0, stride>(b.data, b.rows, b.columns, stride(b.outer_stride())));
    };
    if (a.row_major())
      with_b(Eigen::Map<const row_major, 0, stride>(a.data, a.rows, a.columns, stride(a.outer_stride())));
    else
      with_b(Eigen::Map<const column_major, 0, stride>(a.data, a.rows, a.columns, stride(a.outer_stride())));
  } else {
    std::vector<T> a_rows, b_rows;
    const auto ra = detail::row_major_copy(a, a_rows), rb = detail::row_major_copy(b, b_rows);
    with(Eigen::Map<const row_major, 0, stride>(ra.data, ra.rows, ra.columns, stride(ra.outer_stride())),
         Eigen::Map<const row_major, 0, stride>(rb.data, rb.rows, rb.columns, stride(rb.outer_stride())));
  }
}

#define SYMFLOW_GEMM_INSTANCES(KEYWORD, T)                                                                  \
  KEYWORD template void gemm<T>(const strided_matrix<T>&, const strided_matrix<const T>&,                   \
                                const strided_matrix<const T>&, T, T);
#if SYMFLOW_LIBRARY_GEMM_DECLARED_ONLY
SYMFLOW_GEMM_INSTANCES(extern, float)
SYMFLOW_GEMM_INSTANCES(extern, double)
#elif defined(SYMFLOW_SEPARATE_COMPILATION)
SYMFLOW_GEMM_INSTANCES(, float)
SYMFLOW_GEMM_INSTANCES(, double)
#endif

}  // namespace symflow
