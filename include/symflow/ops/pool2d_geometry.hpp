#ifndef SYMFLOW_OPS_POOL2D_GEOMETRY_HPP
#define SYMFLOW_OPS_POOL2D_GEOMETRY_HPP
// What max and average pooling (pool2d.hpp) share: the geometry of a pooling over NHWC [N,H,W,C]
// (window, stride, padding before and after each axis, floor or ceil rounding), its checks, the
// CPU kernels of both directions and the reading of the graph form's attributes. It defines no op.
//
// Extents are PyTorch's and ONNX's: with the dilated window's span KH' = (KH - 1) * DH + 1,
// OH = floor((H + pad_top + pad_bottom - KH') / SH) + 1, or with ceil_mode the ceiling, less one when
// that last window would start in the padding after the input (torch.nn.MaxPool2d; ONNX
// MaxPool/AveragePool from opset 19 say the same). A dilated window's positions are DH (DW) apart.
// Padding is never read: max-pooling takes the maximum of the window's elements inside the input,
// average pooling divides their sum by their count, or with count_include_pad by the count of window
// positions inside the padded input (PyTorch's count_include_pad=True; ONNX's count_include_pad=1).
// Each pad must be smaller than the window's span, and every window must hold at least one input
// element (a dilated window can straddle a short input with positions on both sides of it).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "../core/tensor.hpp"
#include "../expr/runtime_forms.hpp"
#include "conv2d_geometry.hpp"

namespace symflow {

// Options of a pooling, combined with |: ceil_mode rounds the output extent up (see above);
// count_include_pad makes average pooling divide by the window's positions inside the padded input.
enum class pool_options : unsigned { none = 0, ceil_mode = 1, count_include_pad = 2 };
constexpr pool_options operator|(pool_options a, pool_options b) { return pool_options(unsigned(a) | unsigned(b)); }
constexpr bool has_option(pool_options set, pool_options o) { return (unsigned(set) & unsigned(o)) != 0; }

namespace ops::pool_detail {

// One spatial axis of a pooling.
struct axis_geometry {
  std::size_t in = 0, window = 1, stride = 1, before = 0, after = 0, out = 0, dilation = 1;
  // The span of the dilated window: its first and last positions are span - 1 apart.
  constexpr std::size_t span() const { return (window - 1) * dilation + 1; }
  // Window o's positions are begin(o) + k * dilation for k in [0, window), counted from the input's
  // first element (begin may be negative); those inside the input are k in [first_k, last_k).
  constexpr std::ptrdiff_t begin(std::size_t o) const { return std::ptrdiff_t(o * stride) - std::ptrdiff_t(before); }
  constexpr std::size_t first_k(std::size_t o) const {
    const std::ptrdiff_t b = begin(o);
    return b >= 0 ? 0 : std::size_t((-b + std::ptrdiff_t(dilation) - 1) / std::ptrdiff_t(dilation));
  }
  constexpr std::size_t last_k(std::size_t o) const { return positions_before(o, std::ptrdiff_t(in)); }
  // The input index of window o's first element inside the input, and how many it holds there.
  constexpr std::size_t first(std::size_t o) const { return std::size_t(begin(o) + std::ptrdiff_t(first_k(o) * dilation)); }
  constexpr std::size_t count(std::size_t o) const { return last_k(o) > first_k(o) ? last_k(o) - first_k(o) : 0; }
  // Positions of the window inside the padded axis [-before, in + after).
  constexpr std::size_t padded_count(std::size_t o) const { return positions_before(o, std::ptrdiff_t(in + after)); }
  // How many of window o's positions lie before `end`.
  constexpr std::size_t positions_before(std::size_t o, std::ptrdiff_t end) const {
    const std::ptrdiff_t room = end - begin(o);
    if (room <= 0) return 0;
    return std::min<std::size_t>(window, std::size_t((room + std::ptrdiff_t(dilation) - 1) / std::ptrdiff_t(dilation)));
  }
};

// The output extent, or 0 where the geometry is refused (checked_geometry says why). `span` is the
// dilated window's (axis_geometry::span).
constexpr std::size_t output_extent(std::size_t in, std::size_t span, std::size_t stride, std::size_t before,
                                    std::size_t after, bool ceil_mode) {
  if (span == 0 || stride == 0 || before >= span || after >= span || in + before + after < span) return 0;
  const std::size_t extent = in + before + after - span;
  std::size_t out = (ceil_mode ? (extent + stride - 1) / stride : extent / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + before) --out;
  return out;
}
constexpr std::size_t static_output_extent(std::size_t in, std::size_t span, std::size_t stride, std::size_t before,
                                           std::size_t after, bool ceil_mode) {
  return in == dyn ? dyn : output_extent(in, span, stride, before, after, ceil_mode);
}
// The sum of floor((a x + b) / m) over x in [0, n), in O(log m) steps: a and b are reduced modulo
// m, then the sum is rewritten over the lattice points below the line with the roles of a and m
// swapped (the Euclidean reduction of floor sums). Unsigned 128-bit: a x + b exceeds 2^64 for the
// extents a graph may declare.
__extension__ typedef unsigned __int128 wide_count;
constexpr wide_count floor_sum(wide_count n, wide_count m, wide_count a, wide_count b) {
  wide_count sum = 0;
  while (n != 0) {
    if (a >= m) {
      sum += n * (n - 1) / 2 * (a / m);
      a %= m;
    }
    if (b >= m) {
      sum += n * (b / m);
      b %= m;
    }
    const wide_count top = a * n + b;
    if (top < m) break;
    n = top / m;
    b = top % m;
    const wide_count old_m = m;
    m = a;
    a = old_m;
  }
  return sum;
}

// Whether every window of an axis holds an input element, in O(log) of the extents (a graph's
// declared extents may be 2^40: a loop over the windows would be a hang on hostile input). Only
// dilation can break this once the pads are smaller than the span (checked before): a window that
// starts inside the input reads its first position; one that starts at b < 0 in the padding first
// reaches the input at (b mod dilation), which lies in [0, dilation), so with in >= dilation every
// window reads an element. Otherwise the windows starting in the padding, o * stride < before, are
// counted by whether (o * stride - before) mod dilation >= in, as a difference of two floor sums.
constexpr bool every_window_reads_input(const axis_geometry& a) {
  if (a.out == 0) return true;
  if (a.in == 0) return false;
  if (a.begin(a.out - 1) >= std::ptrdiff_t(a.in)) return false;  // not an extent output_extent gives
  if (a.in >= a.dilation) return true;
  const std::size_t d = a.dilation;
  const std::size_t in_padding = std::min(a.out, a.before / a.stride + (a.before % a.stride != 0));
  const std::size_t s = a.stride % d, start = (d - a.before % d) % d;  // window 0 first reaches start
  // (o s + start) mod d >= in exactly when floor((o s + start + d - in) / d) exceeds floor((o s + start) / d).
  return floor_sum(in_padding, d, s, start + d - a.in) == floor_sum(in_padding, d, s, start);
}

// The largest dilated window span accepted, as large as any tensor axis can be.
inline constexpr std::size_t max_span = std::size_t(1) << 40;

struct geometry {
  std::size_t batch = 0, channels = 0;
  axis_geometry h, w;
  bool count_include_pad = false;
  std::array<std::size_t, 4> output_extents() const { return {batch, h.out, w.out, channels}; }
  std::size_t image_size() const { return h.in * w.in * channels; }
  std::size_t input_size() const { return batch * image_size(); }
};

// The attributes of one pooling: window, stride, pads (top, left, bottom, right) and options.
struct settings {
  std::array<std::size_t, 2> window{1, 1}, stride{1, 1}, dilation{1, 1};
  std::array<std::size_t, 4> pads{0, 0, 0, 0};
  bool ceil_mode = false, count_include_pad = false;
  std::string describe() const {
    auto pair = [](const auto& v, std::size_t a, std::size_t b) {
      return "[" + std::to_string(v[a]) + ", " + std::to_string(v[b]) + "]";
    };
    return "window " + pair(window, 0, 1) + ", stride " + pair(stride, 0, 1) + ", pads [" + std::to_string(pads[0]) + ", " +
           std::to_string(pads[1]) + ", " + std::to_string(pads[2]) + ", " + std::to_string(pads[3]) + "]" +
           (dilation[0] != 1 || dilation[1] != 1 ? ", dilation " + pair(dilation, 0, 1) : std::string()) +
           (ceil_mode ? ", ceil_mode" : "");
  }
};

template <class Who, class X>
geometry checked_geometry(const Who& who, std::string_view op, const X& x, const settings& s) {
  auto fail = [&](const std::string& why) {
    throw shape_error(std::string(who) + ": " + std::string(op) + " of " + format_extents(x) + " (NHWC) with " +
                      s.describe() + ": " + why);
  };
  if (x.size() != 4) fail("the input must have rank 4");
  geometry g{x[0], x[3], {}, {}, s.count_include_pad};
  for (std::size_t a = 0; a < 2; ++a) {
    axis_geometry& ax = a == 0 ? g.h : g.w;
    ax = {x[1 + a], s.window[a], s.stride[a], s.pads[a], s.pads[2 + a], 0, s.dilation[a]};
    if (ax.window == 0 || ax.stride == 0 || ax.dilation == 0) fail("window, stride and dilation must be at least 1");
    // Keeps the span's product from overflowing (a graph's window and dilation may each be 2^40).
    if (ax.window - 1 > max_span / ax.dilation) fail("the dilated window's span (window - 1) * dilation + 1 exceeds 2^40");
    if (ax.before >= ax.span() || ax.after >= ax.span()) fail("each pad must be smaller than the window");
    if (ax.in + ax.before + ax.after < ax.span()) fail("the window must fit in the padded input");
    ax.out = output_extent(ax.in, ax.span(), ax.stride, ax.before, ax.after, s.ceil_mode);
    if (!every_window_reads_input(ax))
      fail(std::string("a dilated window along ") + (a == 0 ? "H" : "W") + " holds no input element");
  }
  // The max-pool adjoint numbers a window's elements on 32 bits (for_each_window_maximum).
  if (g.h.window > std::size_t(UINT32_MAX) / g.w.window) fail("a window holds more than 2^32 - 1 elements");
  return g;
}

// Calls f(first input offset of the window's input elements, rows, columns, output offset, oh, ow)
// for each output pixel of image n; channel c of the window's element (r, q) is at that offset +
// r * row_step(g) + q * column_step(g) + c.
template <class F>
void for_each_window(const geometry& g, std::size_t n, F&& f) {
  const std::size_t C = g.channels;
  for (std::size_t oh = 0; oh < g.h.out; ++oh) {
    const std::size_t r0 = g.h.first(oh), rows = g.h.count(oh);
    for (std::size_t ow = 0; ow < g.w.out; ++ow) {
      const std::size_t c0 = g.w.first(ow), cols = g.w.count(ow);
      f(((n * g.h.in + r0) * g.w.in + c0) * C, rows, cols, ((n * g.h.out + oh) * g.w.out + ow) * C, oh, ow);
    }
  }
}
inline std::size_t row_step(const geometry& g) { return g.h.dilation * g.w.in * g.channels; }
inline std::size_t column_step(const geometry& g) { return g.w.dilation * g.channels; }
inline std::size_t work_per_image(const geometry& g) {
  return g.h.out * g.w.out * g.channels * g.h.window * g.w.window;
}

// Each window is scanned row by row; an element replaces the running maximum only when strictly
// greater, so ties keep the first maximum and a NaN counts only as the window's first element.
template <class T>
void max_forward(const geometry& g, const T* x, T* y) {
  const std::size_t C = g.channels, row = row_step(g), col = column_step(g);
  conv_detail::for_each_image(g.batch, work_per_image(g), [&](std::size_t n) {
    for_each_window(g, n, [&](std::size_t in, std::size_t rows, std::size_t cols, std::size_t out, std::size_t, std::size_t) {
      // A select rather than a conditional store, on pointers that do not alias: vectorised across
      // the channels (the conditional store over y was a scalar loop, 7% of a CNN's step).
      T* __restrict top = y + out;
      std::copy_n(x + in, C, top);
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t q = 0; q < cols; ++q) {
          const T* __restrict v = x + in + r * row + q * col;
          for (std::size_t c = 0; c < C; ++c) top[c] = v[c] > top[c] ? v[c] : top[c];
        }
    });
  });
}

// For each window of image n, f(output offset, best) with best[c] the input offset of channel c's
// first maximum less c, found by max_forward's strict scan.
template <class T, class F>
void for_each_window_maximum(const geometry& g, const T* x, std::size_t n, F&& f) {
  const std::size_t C = g.channels, row = row_step(g), col = column_step(g);
  // The running maximum and the number of its element in the window, next to each other per
  // channel and both 32 bits wide: the scan reads x contiguously and compiles to vector selects.
  // (With 64-bit positions it stayed a scalar loop whose branch on random data mispredicted half
  // the time: the max-pool adjoint took 15 times its forward pass.)
  std::vector<T> top(C);
  std::vector<std::uint32_t> which(C);
  std::vector<std::size_t> best(C), offset;
  for_each_window(g, n, [&](std::size_t in, std::size_t rows, std::size_t cols, std::size_t out, std::size_t, std::size_t) {
    offset.resize(rows * cols);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t q = 0; q < cols; ++q) offset[r * cols + q] = r * row + q * col;
    std::copy_n(x + in, C, top.begin());
    std::fill(which.begin(), which.end(), std::uint32_t(0));
    T* __restrict running = top.data();
    std::uint32_t* __restrict element = which.data();
    // checked_geometry keeps a window below 2^32 elements.
    for (std::uint32_t k = 1; k < std::uint32_t(rows * cols); ++k) {
      const T* __restrict v = x + in + offset[k];
      for (std::size_t c = 0; c < C; ++c) {
        const bool greater = v[c] > running[c];
        running[c] = greater ? v[c] : running[c];
        element[c] = greater ? k : element[c];
      }
    }
    for (std::size_t c = 0; c < C; ++c) best[c] = in + offset[element[c]];
    f(out, best);
  });
}

// dx[first maximum of each window] += g; windows of one image touch only that image, which is
// zeroed by the thread that scatters into it (a serial fill of the whole batch was a third of the
// pass on two threads).
template <class T>
void max_backward(const geometry& g, const T* dy, const T* x, T* dx) {
  const std::size_t image = g.image_size();
  conv_detail::for_each_image(g.batch, work_per_image(g), [&](std::size_t n) {
    std::fill_n(dx + n * image, image, T(0));
    for_each_window_maximum(g, x, n, [&](std::size_t out, const std::vector<std::size_t>& best) {
      for (std::size_t c = 0; c < g.channels; ++c) dx[best[c] + c] += dy[out + c];
    });
  });
}

// The position h * W + w of each window's first maximum within its image and channel.
template <class T>
void max_indices(const geometry& g, const T* x, std::int64_t* indices) {
  conv_detail::for_each_image(g.batch, work_per_image(g), [&](std::size_t n) {
    const std::size_t image = n * g.h.in * g.w.in;
    for_each_window_maximum(g, x, n, [&](std::size_t out, const std::vector<std::size_t>& best) {
      for (std::size_t c = 0; c < g.channels; ++c) indices[out + c] = std::int64_t(best[c] / g.channels - image);
    });
  });
}

// The divisor of output pixel (oh, ow)'s mean.
inline std::size_t average_count(const geometry& g, std::size_t oh, std::size_t ow, std::size_t rows, std::size_t cols) {
  return g.count_include_pad ? g.h.padded_count(oh) * g.w.padded_count(ow) : rows * cols;
}

template <class T>
void avg_forward(const geometry& g, const T* x, T* y) {
  const std::size_t C = g.channels, row = row_step(g), col = column_step(g);
  conv_detail::for_each_image(g.batch, work_per_image(g), [&](std::size_t n) {
    for_each_window(g, n, [&](std::size_t in, std::size_t rows, std::size_t cols, std::size_t out, std::size_t oh, std::size_t ow) {
      std::fill_n(y + out, C, T(0));
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t q = 0; q < cols; ++q) {
          const T* v = x + in + r * row + q * col;
          for (std::size_t c = 0; c < C; ++c) y[out + c] += v[c];
        }
      const T count = T(average_count(g, oh, ow, rows, cols));
      for (std::size_t c = 0; c < C; ++c) y[out + c] /= count;
    });
  });
}

template <class T>
void avg_backward(const geometry& g, const T* dy, T* dx) {
  const std::size_t C = g.channels, row = row_step(g), col = column_step(g);
  const std::size_t image = g.image_size();
  conv_detail::for_each_image(g.batch, work_per_image(g), [&](std::size_t n) {
    std::fill_n(dx + n * image, image, T(0));
    for_each_window(g, n, [&](std::size_t in, std::size_t rows, std::size_t cols, std::size_t out, std::size_t oh, std::size_t ow) {
      const T count = T(average_count(g, oh, ow, rows, cols));
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t q = 0; q < cols; ++q) {
          T* d = dx + in + r * row + q * col;
          for (std::size_t c = 0; c < C; ++c) d[c] += dy[out + c] / count;
        }
    });
  });
}

// The settings a graph node's attributes give: window and stride [h, w], pads [top, left, bottom,
// right] (all 0 when absent), dilation [h, w] (1 when absent), ceil_mode and count_include_pad (false when absent).
template <class Attrs>
settings runtime_settings(const Attrs& a, const std::string& who) {
  settings s;
  auto read = [&](std::string_view key, auto& into, std::int64_t least) {
    const std::vector<std::int64_t> v = a.integers(key);
    if (v.size() != into.size())
      throw value_error(who + ": attribute '" + std::string(key) + "' must list " + std::to_string(into.size()) +
                        " integers, not " + std::to_string(v.size()));
    for (std::size_t i = 0; i < v.size(); ++i) {
      // The bound keeps the geometry's sums far from overflow; no tensor axis is longer.
      if (v[i] < least || v[i] > (std::int64_t(1) << 40))
        throw value_error(who + ": attribute '" + std::string(key) + "' holds " + std::to_string(v[i]) + ", outside [" +
                          std::to_string(least) + ", 2^40]");
      into[i] = std::size_t(v[i]);
    }
  };
  read("window", s.window, 1);
  read("stride", s.stride, 1);
  if (a.has("pads")) read("pads", s.pads, 0);
  if (a.has("dilation")) read("dilation", s.dilation, 1);
  s.ceil_mode = a.has("ceil_mode") && a.boolean("ceil_mode");
  s.count_include_pad = a.has("count_include_pad") && a.boolean("count_include_pad");
  return s;
}
template <class Attrs>
geometry runtime_geometry(const Attrs& a, std::string_view op, const runtime_extents& x, const std::string& who) {
  return checked_geometry(who, op, x, runtime_settings(a, who));
}

}  // namespace ops::pool_detail
}  // namespace symflow
#endif  // SYMFLOW_OPS_POOL2D_GEOMETRY_HPP
