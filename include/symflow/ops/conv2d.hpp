#ifndef SYMFLOW_OPS_CONV2D_HPP
#define SYMFLOW_OPS_CONV2D_HPP
// 2-D convolution and its two adjoints, each a kernel op of its own.
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
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <Eigen/Core>

#include "../core/aligned_buffer.hpp"
#include "../core/tensor.hpp"
#include "../eval/cpu/parallel.hpp"
#include "../expr/leaves.hpp"
#include "../expr/runtime_forms.hpp"
#include "../expr/structural.hpp"

namespace symflow {

// How a window meets the border (TensorFlow's definitions; see conv2d.hpp).
enum class padding : std::uint8_t { valid, same };

namespace ops {
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
void for_each_image(std::size_t count, std::size_t work_per_image, F&& f) {
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

// The adjoint of im2col: each column-matrix entry added back to the input element it was copied from.
template <class T>
void col2im_add(const geometry& g, const T* col, std::size_t first, std::size_t count, T* dx) {
  const std::size_t C = g.channels, patch = g.patch(), rows = g.pixels(), run = g.k_w * C;
  for_each_image(count, rows * patch, [&](std::size_t i) {
    T* image = dx + (first + i) * g.input_image();
    const T* in = col + i * rows * patch;
    for (std::size_t oh = 0; oh < g.out_h; ++oh) {
      for (std::size_t ow = 0; ow < g.out_w; ++ow) {
        const T* row = in + (oh * g.out_w + ow) * patch;
        const column_range cols = columns_inside(g, ow);
        for (std::size_t kh = 0; kh < g.k_h; ++kh) {
          const std::ptrdiff_t ih = std::ptrdiff_t(oh * g.stride + kh) - std::ptrdiff_t(g.pad_top);
          if (ih < 0 || ih >= std::ptrdiff_t(g.in_h)) continue;
          const T* src = row + kh * run + cols.begin * C;
          T* dst = image + (std::size_t(ih) * g.in_w + std::size_t(cols.first_input)) * C;
          for (std::size_t k = 0, n = (cols.end - cols.begin) * C; k < n; ++k) dst[k] += src[k];
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
// per 4 KiB on every call. Not re-entrant, which the kernels below never need.
template <class T>
T* column_buffer(std::size_t n) {
  thread_local aligned_buffer<T> buffer;
  if (buffer.size() < n) buffer = aligned_buffer<T>(n);
  return buffer.data();
}

template <class T>
void forward(const geometry& g, const T* x, const T* w, T* y) {
  const auto patch = Eigen::Index(g.patch()), filters = Eigen::Index(g.filters), rows = Eigen::Index(g.pixels());
  if (patch == 0) {
    std::fill_n(y, g.batch * g.pixels() * g.filters, T(0));
    return;
  }
  Eigen::Map<const row_major<T>> wm(w, patch, filters);
  const std::size_t chunk = images_per_chunk(g);
  T* const col = column_buffer<T>(chunk * g.pixels() * g.patch());  // fully written before it is read
  for (std::size_t n0 = 0; n0 < g.batch; n0 += chunk) {
    const std::size_t count = std::min(chunk, g.batch - n0);
    im2col(g, x, n0, count, col);
    Eigen::Map<const row_major<T>> cm(col, Eigen::Index(count) * rows, patch);
    Eigen::Map<row_major<T>> ym(y + n0 * g.pixels() * g.filters, Eigen::Index(count) * rows, filters);
    ym.noalias() = cm * wm;
  }
}

// dX = col2im(dY W^T)
template <class T>
void backprop_input(const geometry& g, const T* dy, const T* w, T* dx) {
  std::fill_n(dx, g.batch * g.input_image(), T(0));
  const auto patch = Eigen::Index(g.patch()), filters = Eigen::Index(g.filters), rows = Eigen::Index(g.pixels());
  if (patch == 0 || rows == 0) return;
  Eigen::Map<const row_major<T>> wm(w, patch, filters);
  const std::size_t chunk = images_per_chunk(g);
  T* const col = column_buffer<T>(chunk * g.pixels() * g.patch());  // fully written before it is read
  for (std::size_t n0 = 0; n0 < g.batch; n0 += chunk) {
    const std::size_t count = std::min(chunk, g.batch - n0);
    Eigen::Map<const row_major<T>> dym(dy + n0 * g.pixels() * g.filters, Eigen::Index(count) * rows, filters);
    Eigen::Map<row_major<T>> cm(col, Eigen::Index(count) * rows, patch);
    cm.noalias() = dym * wm.transpose();
    col2im_add(g, col, n0, count, dx);
  }
}

// dW = sum over images of im2col(X)^T dY
template <class T>
void backprop_filter(const geometry& g, const T* x, const T* dy, T* dw) {
  const auto patch = Eigen::Index(g.patch()), filters = Eigen::Index(g.filters), rows = Eigen::Index(g.pixels());
  Eigen::Map<row_major<T>> dwm(dw, patch, filters);
  dwm.setZero();
  if (patch == 0 || rows == 0) return;
  const std::size_t chunk = images_per_chunk(g);
  T* const col = column_buffer<T>(chunk * g.pixels() * g.patch());  // fully written before it is read
  for (std::size_t n0 = 0; n0 < g.batch; n0 += chunk) {
    const std::size_t count = std::min(chunk, g.batch - n0);
    im2col(g, x, n0, count, col);
    Eigen::Map<const row_major<T>> cm(col, Eigen::Index(count) * rows, patch);
    Eigen::Map<const row_major<T>> dym(dy + n0 * g.pixels() * g.filters, Eigen::Index(count) * rows, filters);
    dwm.noalias() += cm.transpose() * dym;
  }
}

// The interpreter's arrays are f32 or f64 here; the shape rules already ran.
template <class F>
void with_float_element(dtype t, std::string_view op, F&& f) {
  if (t == dtype::f32) f(float{});
  else if (t == dtype::f64) f(double{});
  else throw value_error(std::string(op) + ": takes f32 or f64 operands, not " + std::string(dtype_name(t)));
}

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
// The same op applied at run time with this node's stride and padding.
template <class B, class Attrs, class H>
H apply_with(B& b, std::string_view op, const std::vector<H>& in, const Attrs& a) {
  return b.apply(op, in, {{"stride", a.integer("stride")}, {"same_padding", a.boolean("same_padding")}});
}

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

// conv2d(x [N,H,W,C], w [KH,KW,C,O]) -> [N,OH,OW,O].
template <std::size_t Stride, padding Padding>
struct conv2d_op : conv2d_attributes<Stride, Padding> {
  static constexpr std::string_view name = "conv2d";
  template <class X, class W>
  using result_type = X;
  template <class SX, class SW>
  static constexpr bool shapes_ok = conv_detail::static_shapes_fit<SX, SW, Stride, Padding>();
  template <class SX, class SW>
  using result_shape = shape_from_array_t<conv_detail::static_result<SX, SW, Stride, Padding>()>;

  static extents_t<4> infer_extents(const auto& who, const extents_t<4>& x, const extents_t<4>& w) {
    return conv_detail::checked_geometry(who, x, w, Stride, Padding).output_extents();
  }
  template <class T, class Out, class X, class W>
  static void run_cpu(const Out& out, const X& x, const W& w) {
    conv_detail::forward<T>(conv_detail::checked_geometry("conv2d", x.extents(), w.extents(), Stride, Padding), x.data(),
                            w.data(), out.data());
  }
  // dX = conv2d_backprop_input(g, w, like x), dW = conv2d_backprop_filter(x, g, like w).
  template <class G, class Y, class X, class W>
  static auto gradient(const G& g, const Y&, const X& x, const W& w) {
    return tuple_of(conv2d_backprop_input<Stride, Padding>(g, w, x), conv2d_backprop_filter<Stride, Padding>(x, g, w));
  }
  // Bilinear: d conv(x, w) = conv(dx, w) + conv(x, dw).
  template <class Y, class TX, class TW, class X, class W>
  static auto tangent(const Y&, const TX& tx, const TW& tw, const X& x, const W& w) {
    return conv_detail::sum_present(
        [&] {
          if constexpr (is_no_gradient_v<TX>) return no_gradient{};
          else return conv2d<Stride, Padding>(tx, w);
        }(),
        [&] {
          if constexpr (is_no_gradient_v<TW>) return no_gradient{};
          else return conv2d<Stride, Padding>(x, tw);
        }());
  }

  // Runtime forms (graph interpreter, builder, differentiation): stride and padding are values.
  template <class Attrs>
  static runtime_extents runtime_extents_of(const Attrs& a, const std::vector<runtime_extents>& in, const std::string& who) {
    conv_detail::expect_operands(in, 2, who);
    const auto e = conv_detail::runtime_geometry(a, in[0], in[1], who).output_extents();
    return runtime_extents(e.begin(), e.end());
  }
  template <class Attrs>
  static void run_runtime(const Attrs& a, const runtime_array& out, const std::vector<runtime_array>& in) {
    const auto g = conv_detail::runtime_geometry(a, in[0].extents, in[1].extents, std::string(name));
    conv_detail::with_float_element(out.type, name, [&](auto t) {
      using T = decltype(t);
      conv_detail::forward<T>(g, static_cast<const T*>(in[0].data), static_cast<const T*>(in[1].data), out.as<T>());
    });
  }
  template <class B, class Attrs, class H>
  static std::vector<std::optional<H>> runtime_gradient(B& b, const Attrs& a, const H& g, const H&, const std::vector<H>& x) {
    return {conv_detail::apply_with(b, "conv2d_backprop_input", std::vector<H>{g, x[1], x[0]}, a),
            conv_detail::apply_with(b, "conv2d_backprop_filter", std::vector<H>{x[0], g, x[1]}, a)};
  }
};

// conv2d_backprop_input(g [N,OH,OW,O], w, like x [N,H,W,C]) -> [N,H,W,C]: the adjoint of conv2d with
// respect to its input. `like` supplies the input's extents only (several inputs give one output size).
template <std::size_t Stride, padding Padding>
struct conv2d_backprop_input_op : conv2d_attributes<Stride, Padding> {
  static constexpr std::string_view name = "conv2d_backprop_input";
  template <class G, class W, class X>
  using result_type = G;
  template <std::size_t I>
  static constexpr bool reads_operand = I != 2;
  template <class SG, class SW, class SX>
  static constexpr bool shapes_ok = [] {
    if constexpr (!conv_detail::static_shapes_fit<SX, SW, Stride, Padding>() || SG::rank != 4) {
      return false;
    } else {
      constexpr auto want = conv_detail::static_result<SX, SW, Stride, Padding>();
      for (std::size_t i = 0; i < 4; ++i)
        if (!conv_detail::compatible(SG::extents[i], want[i])) return false;
      return true;
    }
  }();
  template <class SG, class SW, class SX>
  using result_shape = SX;

  static extents_t<4> infer_extents(const auto& who, const extents_t<4>& g, const extents_t<4>& w, const extents_t<4>& x) {
    const auto geo = conv_detail::checked_geometry(who, x, w, Stride, Padding);
    conv_detail::check_adjoint_extents(who, g, geo.output_extents(), "conv2d's result");
    return x;
  }
  template <class T, class Out, class G, class W, class X>
  static void run_cpu(const Out& out, const G& g, const W& w, const X&) {
    conv_detail::backprop_input<T>(conv_detail::checked_geometry("conv2d_backprop_input", out.extents(), w.extents(), Stride, Padding),
                                   g.data(), w.data(), out.data());
  }
  // <A, bpi(G, W)> = <conv2d(A, W), G>: so dG = conv2d(A, W) and dW = conv2d_backprop_filter(A, G).
  template <class A, class Y, class G, class W, class X>
  static auto gradient(const A& a, const Y&, const G& g, const W& w, const X&) {
    return tuple_of(conv2d<Stride, Padding>(a, w), conv2d_backprop_filter<Stride, Padding>(a, g, w), no_gradient{});
  }
  template <class Y, class TG, class TW, class TX, class G, class W, class X>
  static auto tangent(const Y&, const TG& tg, const TW& tw, const TX&, const G& g, const W& w, const X& x) {
    return conv_detail::sum_present(
        [&] {
          if constexpr (is_no_gradient_v<TG>) return no_gradient{};
          else return conv2d_backprop_input<Stride, Padding>(tg, w, x);
        }(),
        [&] {
          if constexpr (is_no_gradient_v<TW>) return no_gradient{};
          else return conv2d_backprop_input<Stride, Padding>(g, tw, x);
        }());
  }

  template <class Attrs>
  static runtime_extents runtime_extents_of(const Attrs& a, const std::vector<runtime_extents>& in, const std::string& who) {
    conv_detail::expect_operands(in, 3, who);
    const auto geo = conv_detail::runtime_geometry(a, in[2], in[1], who);
    conv_detail::check_adjoint_extents(who, in[0], geo.output_extents(), "conv2d's result");
    return in[2];
  }
  template <class Attrs>
  static void run_runtime(const Attrs& a, const runtime_array& out, const std::vector<runtime_array>& in) {
    const auto geo = conv_detail::runtime_geometry(a, in[2].extents, in[1].extents, std::string(name));
    conv_detail::with_float_element(out.type, name, [&](auto t) {
      using T = decltype(t);
      conv_detail::backprop_input<T>(geo, static_cast<const T*>(in[0].data), static_cast<const T*>(in[1].data), out.as<T>());
    });
  }
  template <class B, class Attrs, class H>
  static std::vector<std::optional<H>> runtime_gradient(B& b, const Attrs& a, const H& g, const H&, const std::vector<H>& x) {
    return {conv_detail::apply_with(b, "conv2d", std::vector<H>{g, x[1]}, a),
            conv_detail::apply_with(b, "conv2d_backprop_filter", std::vector<H>{g, x[0], x[1]}, a), std::nullopt};
  }
};

// conv2d_backprop_filter(x [N,H,W,C], g [N,OH,OW,O], like w [KH,KW,C,O]) -> [KH,KW,C,O]: the adjoint
// of conv2d with respect to its filter; `like` supplies the filter's extents only.
template <std::size_t Stride, padding Padding>
struct conv2d_backprop_filter_op : conv2d_attributes<Stride, Padding> {
  static constexpr std::string_view name = "conv2d_backprop_filter";
  template <class X, class G, class W>
  using result_type = X;
  template <std::size_t I>
  static constexpr bool reads_operand = I != 2;
  template <class SX, class SG, class SW>
  static constexpr bool shapes_ok = conv2d_backprop_input_op<Stride, Padding>::template shapes_ok<SG, SW, SX>;
  template <class SX, class SG, class SW>
  using result_shape = SW;

  static extents_t<4> infer_extents(const auto& who, const extents_t<4>& x, const extents_t<4>& g, const extents_t<4>& w) {
    const auto geo = conv_detail::checked_geometry(who, x, w, Stride, Padding);
    conv_detail::check_adjoint_extents(who, g, geo.output_extents(), "conv2d's result");
    return w;
  }
  template <class T, class Out, class X, class G, class W>
  static void run_cpu(const Out& out, const X& x, const G& g, const W&) {
    conv_detail::backprop_filter<T>(conv_detail::checked_geometry("conv2d_backprop_filter", x.extents(), out.extents(), Stride, Padding),
                                    x.data(), g.data(), out.data());
  }
  // <A, bpf(X, G)> = <conv2d(X, A), G>: so dX = conv2d_backprop_input(G, A) and dG = conv2d(X, A).
  template <class A, class Y, class X, class G, class W>
  static auto gradient(const A& a, const Y&, const X& x, const G& g, const W&) {
    return tuple_of(conv2d_backprop_input<Stride, Padding>(g, a, x), conv2d<Stride, Padding>(x, a), no_gradient{});
  }
  template <class Y, class TX, class TG, class TW, class X, class G, class W>
  static auto tangent(const Y&, const TX& tx, const TG& tg, const TW&, const X& x, const G& g, const W& w) {
    return conv_detail::sum_present(
        [&] {
          if constexpr (is_no_gradient_v<TX>) return no_gradient{};
          else return conv2d_backprop_filter<Stride, Padding>(tx, g, w);
        }(),
        [&] {
          if constexpr (is_no_gradient_v<TG>) return no_gradient{};
          else return conv2d_backprop_filter<Stride, Padding>(x, tg, w);
        }());
  }

  template <class Attrs>
  static runtime_extents runtime_extents_of(const Attrs& a, const std::vector<runtime_extents>& in, const std::string& who) {
    conv_detail::expect_operands(in, 3, who);
    const auto geo = conv_detail::runtime_geometry(a, in[0], in[2], who);
    conv_detail::check_adjoint_extents(who, in[1], geo.output_extents(), "conv2d's result");
    return in[2];
  }
  template <class Attrs>
  static void run_runtime(const Attrs& a, const runtime_array& out, const std::vector<runtime_array>& in) {
    const auto geo = conv_detail::runtime_geometry(a, in[0].extents, in[2].extents, std::string(name));
    conv_detail::with_float_element(out.type, name, [&](auto t) {
      using T = decltype(t);
      conv_detail::backprop_filter<T>(geo, static_cast<const T*>(in[0].data), static_cast<const T*>(in[1].data), out.as<T>());
    });
  }
  template <class B, class Attrs, class H>
  static std::vector<std::optional<H>> runtime_gradient(B& b, const Attrs& a, const H& g, const H&, const std::vector<H>& x) {
    return {conv_detail::apply_with(b, "conv2d_backprop_input", std::vector<H>{x[1], g, x[0]}, a),
            conv_detail::apply_with(b, "conv2d", std::vector<H>{x[0], g}, a), std::nullopt};
  }
};
}  // namespace ops

namespace detail {
template <class X, class W>
consteval void check_conv_operands() {
  static_assert(std::is_same_v<value_type_of<X>, value_type_of<W>> && std::is_floating_point_v<value_type_of<X>>,
                "symflow: conv2d needs floating-point operands of one dtype");
}
}  // namespace detail

// 2-D convolution, NHWC input [N,H,W,C] with an HWIO filter [KH,KW,C,O], the same stride along both
// spatial axes, TensorFlow's `valid` or `same` padding: conv2d<1, padding::same>(x, w).
template <std::size_t Stride = 1, padding Padding = padding::valid, expression X, expression W>
auto conv2d(const X& x, const W& w, source_site where = source_site::current()) {
  detail::check_conv_operands<X, W>();
  return make_kernel(ops::conv2d_op<Stride, Padding>{}, where, x, w);
}
template <std::size_t Stride = 1, padding Padding = padding::valid, expression G, expression W, expression X>
auto conv2d_backprop_input(const G& g, const W& w, const X& like, source_site where = source_site::current()) {
  detail::check_conv_operands<G, W>();
  return make_kernel(ops::conv2d_backprop_input_op<Stride, Padding>{}, where, g, w, like);
}
template <std::size_t Stride = 1, padding Padding = padding::valid, expression X, expression G, expression W>
auto conv2d_backprop_filter(const X& x, const G& g, const W& like, source_site where = source_site::current()) {
  detail::check_conv_operands<X, G>();
  return make_kernel(ops::conv2d_backprop_filter_op<Stride, Padding>{}, where, x, g, like);
}
}  // namespace symflow
#endif  // SYMFLOW_OPS_CONV2D_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(kernel, conv2d_op<1, padding::same>)
SYMFLOW_LISTED(kernel, conv2d_backprop_input_op<1, padding::same>)
SYMFLOW_LISTED(kernel, conv2d_backprop_filter_op<1, padding::same>)
#endif
