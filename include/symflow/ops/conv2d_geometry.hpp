#ifndef SYMFLOW_OPS_CONV2D_GEOMETRY_HPP
#define SYMFLOW_OPS_CONV2D_GEOMETRY_HPP
// What the three convolution ops (conv2d.hpp, conv2d_backprop_input.hpp, conv2d_backprop_filter.hpp)
// share: padding, their extent rules, the geometry of one convolution, im2col and its buffer, the
// helpers of their runtime forms and their attributes. It defines no op (no entry in the op list);
// pooling, dropout and softmax_cross_entropy use its runtime helpers too.
//
// Layout: input NHWC [N,H,W,C], filter HWIO [KH,KW,C,O], result NHWC [N,OH,OW,O]. NHWC is what the
// data loaders produce ([n,28,28,1] for Fashion-MNIST), and with it one output pixel's receptive
// field is KH runs of KW*C contiguous input values, so im2col copies whole runs; HWIO makes the
// filter, read as a [KH*KW*C, O] row-major matrix, the right-hand side of the GEMM without a copy.
//
// Padding is TensorFlow's: `valid` uses no padding (OH = (H-KH)/stride + 1); `same` gives
// OH = ceil(H/stride) and pads max((OH-1)*stride + KH - H, 0) zeros in total, the odd one at the
// bottom (right), so a backend that follows TF gives the same values.
//
// CPU: im2col into a buffer for a chunk of images, then one Eigen GEMM for the chunk (Eigen spreads it
// over threads; the im2col and col2im copies are split over images with OpenMP). No output element is
// summed from per-thread partials, so how threads are scheduled does not change a result.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>
#include <Eigen/Core>

#include "../core/aligned_buffer.hpp"
#include "../core/tensor.hpp"
#include "../core/parallel.hpp"
#include "../expr/derivative_rule.hpp"
#include "../expr/leaves.hpp"
#include "../expr/runtime_forms.hpp"
#include "../expr/structural.hpp"

namespace symflow {

// How a window meets the border (TensorFlow's definitions; see above).
enum class padding : std::uint8_t { valid, same };

namespace ops {
// The convolution family: each op's derivative rule names the others.
template <std::size_t Stride, padding Padding>
struct conv2d_op;
template <std::size_t Stride, padding Padding>
struct conv2d_backprop_input_op;
template <std::size_t Stride, padding Padding>
struct conv2d_backprop_filter_op;

namespace conv_detail {

constexpr std::size_t output_extent(std::size_t in, std::size_t k, std::size_t stride, padding p) {
  if (p == padding::same) return (in + stride - 1) / stride;
  return in >= k ? (in - k) / stride + 1 : 0;
}
constexpr std::size_t padding_before(std::size_t in, std::size_t k, std::size_t stride, padding p) {
  const std::size_t out = output_extent(in, k, stride, p);
  if (p == padding::valid || out == 0) return 0;
  const std::size_t span = (out - 1) * stride + k;
  return span > in ? (span - in) / 2 : 0;
}

// Static extent rules; dyn stays dyn. A `same` result does not depend on the kernel's extent.
constexpr std::size_t static_output_extent(std::size_t in, std::size_t k, std::size_t stride, padding p) {
  if (in == dyn || (k == dyn && p == padding::valid)) return dyn;
  return output_extent(in, k, stride, p);
}
constexpr bool compatible(std::size_t a, std::size_t b) { return a == b || a == dyn || b == dyn; }

// The convolutions' dtype rule for the two operands they compute with (a `like` operand gives
// extents only, so any dtype): one floating-point dtype.
template <class A, class B>
inline constexpr bool one_floating_dtype = std::is_same_v<A, B> && std::is_floating_point_v<A>;

template <class SX, class SW, std::size_t Stride, padding P>
consteval bool static_shapes_fit() {
  if constexpr (SX::rank != 4 || SW::rank != 4) {
    return false;
  } else {
    constexpr auto x = SX::extents;
    constexpr auto w = SW::extents;
    if (!compatible(x[3], w[2])) return false;
    for (std::size_t i = 0; i < 2; ++i) {
      if (w[i] == 0) return false;
      if (P == padding::valid && x[1 + i] != dyn && w[i] != dyn && x[1 + i] < w[i]) return false;
    }
    return true;
  }
}
// The probe of op_registry.hpp instantiates result shapes with shapes that fail shapes_ok: those get
// an all-dyn shape instead of a hard error.
template <class SX, class SW, std::size_t Stride, padding P>
consteval std::array<std::size_t, 4> static_result() {
  if constexpr (SX::rank != 4 || SW::rank != 4) {
    return {dyn, dyn, dyn, dyn};
  } else {
    constexpr auto x = SX::extents;
    constexpr auto w = SW::extents;
    return {x[0], static_output_extent(x[1], w[0], Stride, P), static_output_extent(x[2], w[1], Stride, P), w[3]};
  }
}
// The operands of an adjoint (g, w, x or x, g, w): x and w fit, and g may be conv2d's result for them.
template <class SX, class SW, class SG, std::size_t Stride, padding P>
consteval bool adjoint_shapes_fit() {
  if constexpr (!static_shapes_fit<SX, SW, Stride, P>() || SG::rank != 4) {
    return false;
  } else {
    constexpr auto want = static_result<SX, SW, Stride, P>();
    for (std::size_t i = 0; i < 4; ++i)
      if (!compatible(SG::extents[i], want[i])) return false;
    return true;
  }
}

// Everything the kernels need about one convolution, from runtime extents.
struct geometry {
  std::size_t batch = 0, in_h = 0, in_w = 0, channels = 0, k_h = 0, k_w = 0, filters = 0;
  std::size_t out_h = 0, out_w = 0, stride = 1, pad_top = 0, pad_left = 0;

  std::size_t patch() const { return k_h * k_w * channels; }
  std::size_t pixels() const { return out_h * out_w; }
  std::size_t input_image() const { return in_h * in_w * channels; }
  std::array<std::size_t, 4> output_extents() const { return {batch, out_h, out_w, filters}; }
};

// x and w: four extents each (std::array or runtime_extents of size 4).
template <class Who, class X, class Wt>
geometry checked_geometry(const Who& who, const X& x, const Wt& w, std::size_t stride, padding p) {
  auto fail = [&](const std::string& why) {
    throw shape_error(std::string(who) + ": conv2d of input " + format_extents(x) + " (NHWC) with filter " +
                      format_extents(w) + " (HWIO): " + why);
  };
  if (x.size() != 4 || w.size() != 4) fail("both must have rank 4");
  if (stride == 0) fail("the stride must be at least 1");
  if (x[3] != w[2]) fail("the input has " + std::to_string(x[3]) + " channels, the filter takes " + std::to_string(w[2]));
  if (w[0] == 0 || w[1] == 0) fail("the filter window is empty");
  if (p == padding::valid && (x[1] < w[0] || x[2] < w[1]))
    fail("with valid padding the window must fit in the input");
  geometry g;
  g.batch = x[0], g.in_h = x[1], g.in_w = x[2], g.channels = x[3];
  g.k_h = w[0], g.k_w = w[1], g.filters = w[3], g.stride = stride;
  g.out_h = output_extent(g.in_h, g.k_h, stride, p);
  g.out_w = output_extent(g.in_w, g.k_w, stride, p);
  g.pad_top = padding_before(g.in_h, g.k_h, stride, p);
  g.pad_left = padding_before(g.in_w, g.k_w, stride, p);
  return g;
}

template <class Who, class G, class Want>
void check_adjoint_extents(const Who& who, const G& got, const Want& want, const char* of) {
  bool ok = got.size() == want.size();
  for (std::size_t i = 0; ok && i < want.size(); ++i) ok = got[i] == want[i];
  if (!ok)
    throw shape_error(std::string(who) + ": the adjoint has shape " + format_extents(got) + ", but " + of +
                      " has shape " + format_extents(want));
}

// Runs f(i) for i in [0, count), split over OpenMP threads when the work is large enough to pay
// for starting them; f(i) must touch only image i's memory.
template <class F>
void for_each_image(std::size_t count, [[maybe_unused]] std::size_t work_per_image, F&& f) {
#if defined(_OPENMP)
  if (count > 1 && count * work_per_image >= cpu::parallel_threshold && cpu::max_threads() > 1) {
#pragma omp parallel for schedule(static)
    for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(count); ++i) f(std::size_t(i));
    return;
  }
#endif
  for (std::size_t i = 0; i < count; ++i) f(i);
}

// The input columns [kw_begin, kw_end) of a filter row that fall inside the image, for output
// column ow: outside them the padded input is zero.
struct column_range {
  std::size_t begin, end;
  std::ptrdiff_t first_input;  // input column of kw = begin
};
inline column_range columns_inside(const geometry& g, std::size_t ow) {
  const std::ptrdiff_t origin = std::ptrdiff_t(ow * g.stride) - std::ptrdiff_t(g.pad_left);
  const std::ptrdiff_t lo = std::max<std::ptrdiff_t>(0, -origin);
  const std::ptrdiff_t hi = std::min<std::ptrdiff_t>(std::ptrdiff_t(g.k_w), std::ptrdiff_t(g.in_w) - origin);
  if (hi <= lo) return {0, 0, 0};
  return {std::size_t(lo), std::size_t(hi), origin + lo};
}

// Rows of the column matrix for images [first, first+count): row (i, oh, ow) holds the receptive
// field of that output pixel in (kh, kw, c) order — the row order of the HWIO filter matrix.
template <class T>
void im2col(const geometry& g, const T* x, std::size_t first, std::size_t count, T* col) {
  const std::size_t C = g.channels, patch = g.patch(), rows = g.pixels(), run = g.k_w * C;
  for_each_image(count, rows * patch, [&](std::size_t i) {
    const T* image = x + (first + i) * g.input_image();
    T* out = col + i * rows * patch;
    for (std::size_t oh = 0; oh < g.out_h; ++oh) {
      for (std::size_t ow = 0; ow < g.out_w; ++ow) {
        T* row = out + (oh * g.out_w + ow) * patch;
        const column_range cols = columns_inside(g, ow);
        for (std::size_t kh = 0; kh < g.k_h; ++kh) {
          T* dst = row + kh * run;
          const std::ptrdiff_t ih = std::ptrdiff_t(oh * g.stride + kh) - std::ptrdiff_t(g.pad_top);
          if (ih < 0 || ih >= std::ptrdiff_t(g.in_h) || cols.begin == cols.end) {
            std::fill_n(dst, run, T(0));
            continue;
          }
          std::fill_n(dst, cols.begin * C, T(0));
          std::copy_n(image + (std::size_t(ih) * g.in_w + std::size_t(cols.first_input)) * C, (cols.end - cols.begin) * C,
                      dst + cols.begin * C);
          std::fill_n(dst + cols.end * C, (g.k_w - cols.end) * C, T(0));
        }
      }
    }
  });
}

// Images per im2col buffer: enough rows for an efficient GEMM, few enough (2^20 entries, 4 MiB of
// floats) that the buffer is still in cache when the GEMM reads what im2col wrote; 2^22 measured
// 10-20% slower on the target CNN.
inline std::size_t images_per_chunk(const geometry& g) {
  const std::size_t per_image = std::max<std::size_t>(1, g.pixels() * g.patch());
  return std::clamp<std::size_t>((std::size_t(1) << 20) / per_image, 1, std::max<std::size_t>(g.batch, 1));
}

template <class T>
using row_major = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// The column buffer, kept per thread between calls: a fresh multi-MiB allocation costs a page fault
// per 4 KiB on every call. Not re-entrant, which the convolution kernels never need.
template <class T>
T* column_buffer(std::size_t n) {
  thread_local aligned_buffer<T> buffer;
  if (buffer.size() < n) buffer = aligned_buffer<T>(n);
  return buffer.data();
}

// The interpreter's arrays are f32 or f64 here; the shape rules already ran.
using symflow::with_float_element;

template <class Attrs>
std::size_t runtime_stride(const Attrs& a, const std::string& who) {
  const std::int64_t s = a.integer("stride");
  if (s < 1) throw value_error(who + ": the stride must be at least 1, not " + std::to_string(s));
  return std::size_t(s);
}
template <class Attrs>
padding runtime_padding(const Attrs& a) {
  return a.boolean("same_padding") ? padding::same : padding::valid;
}
template <class Attrs>
geometry runtime_geometry(const Attrs& a, const runtime_extents& x, const runtime_extents& w, const std::string& who) {
  return checked_geometry(who, x, w, runtime_stride(a, who), runtime_padding(a));
}
inline void expect_operands(const std::vector<runtime_extents>& in, std::size_t n, const std::string& who) {
  if (in.size() != n)
    throw shape_error(who + ": takes " + std::to_string(n) + " operands, not " + std::to_string(in.size()));
}

// The sum of a tangent's two parts, either of which may be absent (no_gradient).
template <class A, class B>
auto sum_present(const A& a, const B& b) {
  if constexpr (is_no_gradient_v<A>) return b;
  else if constexpr (is_no_gradient_v<B>) return a;
  else return a + b;
}
}  // namespace conv_detail

// Attributes shared by the three ops.
template <std::size_t Stride, padding Padding>
struct conv2d_attributes {
  static_assert(Stride > 0, "symflow: a convolution's stride must be at least 1");
  static constexpr bool contiguous_operands = true;
  template <class V>
  static void visit_attributes(V&& v) {
    v("stride", Stride);
    v("same_padding", Padding == padding::same);
  }
};
}  // namespace ops

namespace detail {
template <class X, class W>
consteval void check_conv_operands() {
  static_assert(ops::conv_detail::one_floating_dtype<value_type_of<X>, value_type_of<W>>,
                "symflow: conv2d needs floating-point operands of one dtype");
}
}  // namespace detail
}  // namespace symflow
#endif  // SYMFLOW_OPS_CONV2D_GEOMETRY_HPP
