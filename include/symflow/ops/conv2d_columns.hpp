#ifndef SYMFLOW_OPS_CONV2D_COLUMNS_HPP
#define SYMFLOW_OPS_CONV2D_COLUMNS_HPP
// The CPU convolutions' column matrix: im2col, its adjoint col2im_add, and the buffer they fill.
// Row (image, oh, ow) of one group's column matrix holds that output pixel's receptive field in the
// group's input channels, in (kh, kw, c) order — the row order of the HWIO filter read as a matrix.
// Positions the dilated window puts in the padding read 0. Geometry: conv2d_geometry.hpp.
#include <algorithm>
#include <cstddef>

#include "../core/thread_tasks.hpp"
#include "conv2d_geometry.hpp"

namespace symflow::ops::conv_detail {

// The filter columns [begin, end) of a filter row whose (dilated) taps fall inside the image, for
// output column ow: outside them the padded input is zero.
struct column_range {
  std::size_t begin, end;
  std::ptrdiff_t first_input;  // input column of kw = begin
};
inline column_range columns_inside(const geometry& g, std::size_t ow) {
  const std::ptrdiff_t origin = std::ptrdiff_t(ow * g.stride) - std::ptrdiff_t(g.pad_left);
  const std::ptrdiff_t d = std::ptrdiff_t(g.dilation), width = std::ptrdiff_t(g.in_w);
  if (origin >= width) return {0, 0, 0};
  // kw is inside when 0 <= origin + kw * d < width.
  const std::ptrdiff_t lo = origin >= 0 ? 0 : (-origin + d - 1) / d;
  const std::ptrdiff_t hi = std::min<std::ptrdiff_t>(std::ptrdiff_t(g.k_w), (width - origin - 1) / d + 1);
  if (hi <= lo) return {0, 0, 0};
  return {std::size_t(lo), std::size_t(hi), origin + lo * d};
}

// Calls row_op(image, row, kh, cols, ih) for each output pixel's filter row kh, ih being the
// input row (negative or past the end: outside the image) and row the pixel's column-matrix row.
template <class ColumnPtr, class RowOp>
void for_each_filter_row(const geometry& g, ColumnPtr col, std::size_t first, std::size_t count, RowOp&& row_op) {
  const std::size_t patch = g.patch(), rows = g.pixels(), run = g.k_w * g.group_channels();
  for_each_image(count, rows * patch, [&](std::size_t i) {
    const std::size_t image = first + i;
    for (std::size_t oh = 0; oh < g.out_h; ++oh) {
      for (std::size_t ow = 0; ow < g.out_w; ++ow) {
        const auto row = col + (i * rows + oh * g.out_w + ow) * patch;
        const column_range cols = columns_inside(g, ow);
        for (std::size_t kh = 0; kh < g.k_h; ++kh) {
          const std::ptrdiff_t ih = std::ptrdiff_t(oh * g.stride + kh * g.dilation) - std::ptrdiff_t(g.pad_top);
          row_op(image, row + kh * run, cols, ih);
        }
      }
    }
  });
}

// One group's column matrix for images [first, first + count).
template <class T>
void im2col(const geometry& g, const T* x, std::size_t first, std::size_t count, std::size_t group, T* col) {
  const std::size_t C = g.channels, Cg = g.group_channels(), run = g.k_w * Cg, step = g.dilation * C;
  const bool contiguous = g.dilation == 1 && Cg == C;  // a filter row's inputs are one run
  for_each_filter_row(g, col, first, count, [&](std::size_t image, T* dst, const column_range& cols, std::ptrdiff_t ih) {
    if (ih < 0 || ih >= std::ptrdiff_t(g.in_h) || cols.begin == cols.end) {
      std::fill_n(dst, run, T(0));
      return;
    }
    const T* src = x + image * g.input_image() + (std::size_t(ih) * g.in_w + std::size_t(cols.first_input)) * C + group * Cg;
    std::fill_n(dst, cols.begin * Cg, T(0));
    if (contiguous) {
      std::copy_n(src, (cols.end - cols.begin) * C, dst + cols.begin * C);
    } else {
      for (std::size_t kw = cols.begin; kw < cols.end; ++kw, src += step) std::copy_n(src, Cg, dst + kw * Cg);
    }
    std::fill_n(dst + cols.end * Cg, (g.k_w - cols.end) * Cg, T(0));
  });
}

// The adjoint of im2col: each entry of one group's column matrix added back to the input element it
// was copied from.
template <class T>
void col2im_add(const geometry& g, const T* col, std::size_t first, std::size_t count, std::size_t group, T* dx) {
  const std::size_t C = g.channels, Cg = g.group_channels(), step = g.dilation * C;
  const bool contiguous = g.dilation == 1 && Cg == C;  // a filter row's inputs are one run
  for_each_filter_row(g, col, first, count, [&](std::size_t image, const T* src, const column_range& cols, std::ptrdiff_t ih) {
    if (ih < 0 || ih >= std::ptrdiff_t(g.in_h)) return;
    T* dst = dx + image * g.input_image() + (std::size_t(ih) * g.in_w + std::size_t(cols.first_input)) * C + group * Cg;
    if (contiguous) {
      src += cols.begin * C;
      for (std::size_t k = 0, n = (cols.end - cols.begin) * C; k < n; ++k) dst[k] += src[k];
      return;
    }
    for (std::size_t kw = cols.begin; kw < cols.end; ++kw, dst += step)
      for (std::size_t c = 0; c < Cg; ++c) dst[c] += src[kw * Cg + c];
  });
}

// Images per chunk: a chunk's column matrix is about 2^16 entries (256 KiB of floats; at least one
// image), so that it stays in one core's L2 cache between im2col writing it and the GEMM reading it,
// and a batch makes enough chunks to keep every thread busy. Measured on the examples' CNN (batch
// 64, 2 threads, conv 5x5 32->64 and 1->32): 2^16-2^17 best, 2^19 10-25% slower; the earlier 4 MiB
// chunks with each GEMM spread over the threads ran the filter and input adjoints at 180 and 127
// GFLOP/s, now 240 and 270. The size depends on the geometry only, never on the thread count, so
// results do not either.
inline std::size_t images_per_chunk(const geometry& g) {
  const std::size_t per_image = std::max<std::size_t>(1, g.pixels() * g.patch());
  return std::clamp<std::size_t>((std::size_t(1) << 16) / per_image, 1, std::max<std::size_t>(g.batch, 1));
}

using cpu::run_tasks;
using cpu::thread_buffer;
template <class T>
T* column_buffer(std::size_t n) {
  return thread_buffer<T>(n);
}

// The batch's chunks of images_per_chunk(g) images, and the multiply-adds of one GEMM pass over it.
struct chunking {
  std::size_t batch, images, count;
  double work;
  explicit chunking(const geometry& g)
      : batch(g.batch),
        images(images_per_chunk(g)),
        count((g.batch + images - 1) / images),
        work(double(g.batch) * double(g.pixels()) * double(g.patch()) * double(g.filters)) {}
  std::size_t first(std::size_t k) const { return k * images; }
  std::size_t size(std::size_t k) const { return std::min(images, batch - first(k)); }
};

// Calls f(first, count, col) for every chunk, col being the running thread's column buffer: per
// chunk, im2col and a GEMM on one core, the buffer still in its cache when the GEMM reads it.
template <class T, class F>
void for_each_chunk(const geometry& g, F&& f) {
  const chunking c(g);
  const std::size_t entries = c.images * g.pixels() * g.patch();
  run_tasks(c.count, c.work, [&](std::size_t k) { f(c.first(k), c.size(k), column_buffer<T>(entries)); });
}

// Group `group`'s block of a row-major matrix whose rows hold all groups' columns side by side:
// `cols` columns starting at group * cols, rows `stride` apart.
template <class T>
auto group_block(T* data, std::size_t rows, std::size_t cols, std::size_t stride, std::size_t group) {
  using matrix = std::conditional_t<std::is_const_v<T>, const row_major<std::remove_const_t<T>>, row_major<T>>;
  return Eigen::Map<matrix, 0, Eigen::OuterStride<>>(data + group * cols, Eigen::Index(rows), Eigen::Index(cols),
                                                     Eigen::OuterStride<>(Eigen::Index(stride)));
}

}  // namespace symflow::ops::conv_detail
#endif  // SYMFLOW_OPS_CONV2D_COLUMNS_HPP
