#ifndef SYMFLOW_OPS_CONV2D_DEPTHWISE_HPP
#define SYMFLOW_OPS_CONV2D_DEPTHWISE_HPP
// The CPU convolutions when every group has one input channel (depthwise: groups = C, each input
// channel c feeding its M = O / C outputs c*M .. c*M + M - 1). The im2col + GEMM path would run C
// GEMMs of one column over C strided passes of the input; these direct loops read each input row
// once, with the channels innermost (contiguous in NHWC and in the HWIO filter).
//
// They compute what the GEMM path computes: a tap in the padding contributes 0 * w (so an infinite
// weight there gives NaN, as in the GEMM), sums run over the taps in (kh, kw) order, and each output
// element is summed by one thread (the filter gradient is split over taps, not over images), so
// the thread count does not change a result.
#include <algorithm>
#include <cstddef>

#include "conv2d_geometry.hpp"

namespace symflow::ops::conv_detail {

inline bool is_depthwise(const geometry& g) { return g.groups > 1 && g.group_channels() == 1; }

// Input row (image n, ih, iw) of x (or of its gradient), or nullptr where the tap falls in the padding.
template <class Pointer>
Pointer input_row(const geometry& g, Pointer x, std::size_t n, std::ptrdiff_t ih, std::ptrdiff_t iw) {
  if (ih < 0 || iw < 0 || ih >= std::ptrdiff_t(g.in_h) || iw >= std::ptrdiff_t(g.in_w)) return nullptr;
  return x + ((n * g.in_h + std::size_t(ih)) * g.in_w + std::size_t(iw)) * g.channels;
}
inline std::ptrdiff_t tap_row(const geometry& g, std::size_t oh, std::size_t kh) {
  return std::ptrdiff_t(oh * g.stride + kh * g.dilation) - std::ptrdiff_t(g.pad_top);
}
inline std::ptrdiff_t tap_column(const geometry& g, std::size_t ow, std::size_t kw) {
  return std::ptrdiff_t(ow * g.stride + kw * g.dilation) - std::ptrdiff_t(g.pad_left);
}

// acc[c*M + j] += in[c] * v[c*M + j] for the C input channels and their M outputs each; a tap in
// the padding (in == nullptr) adds 0 * v, as the GEMM path's zero column entries do.
template <class T>
void accumulate_tap(T* acc, const T* in, const T* v, std::size_t C, std::size_t M) {
  if (!in) {
    for (std::size_t o = 0; o < C * M; ++o) acc[o] += T(0) * v[o];
  } else if (M == 1) {
    for (std::size_t o = 0; o < C; ++o) acc[o] += in[o] * v[o];
  } else {
    for (std::size_t c = 0; c < C; ++c)
      for (std::size_t j = 0; j < M; ++j) acc[c * M + j] += in[c] * v[c * M + j];
  }
}

// y[n, oh, ow, c*M + j] = sum over taps of x[n, ih, iw, c] * w[kh, kw, 0, c*M + j].
template <class T>
void depthwise_forward(const geometry& g, const T* x, const T* w, T* y) {
  const std::size_t C = g.channels, M = g.group_filters(), O = g.filters, taps = g.k_h * g.k_w;
  for_each_image(g.batch, g.pixels() * O * taps, [&](std::size_t n) {
    for (std::size_t oh = 0; oh < g.out_h; ++oh)
      for (std::size_t ow = 0; ow < g.out_w; ++ow) {
        T* out = y + ((n * g.out_h + oh) * g.out_w + ow) * O;
        std::fill_n(out, O, T(0));
        for (std::size_t kh = 0; kh < g.k_h; ++kh)
          for (std::size_t kw = 0; kw < g.k_w; ++kw) {
            const T* in = input_row(g, x, n, tap_row(g, oh, kh), tap_column(g, ow, kw));
            accumulate_tap(out, in, w + (kh * g.k_w + kw) * O, C, M);
          }
      }
  });
}

// dx[n, ih, iw, c] = sum over the outputs whose taps read it of sum_j dy[.., c*M + j] * w[tap, c*M + j].
template <class T>
void depthwise_backprop_input(const geometry& g, const T* dy, const T* w, T* dx) {
  const std::size_t C = g.channels, M = g.group_filters(), O = g.filters, taps = g.k_h * g.k_w;
  std::fill_n(dx, g.batch * g.input_image(), T(0));
  for_each_image(g.batch, g.pixels() * O * taps, [&](std::size_t n) {
    for (std::size_t oh = 0; oh < g.out_h; ++oh)
      for (std::size_t ow = 0; ow < g.out_w; ++ow) {
        const T* grad = dy + ((n * g.out_h + oh) * g.out_w + ow) * O;
        for (std::size_t kh = 0; kh < g.k_h; ++kh)
          for (std::size_t kw = 0; kw < g.k_w; ++kw) {
            T* in = input_row(g, dx, n, tap_row(g, oh, kh), tap_column(g, ow, kw));
            if (!in) continue;  // a padded position has no input to receive its share
            const T* wr = w + (kh * g.k_w + kw) * O;
            if (M == 1) {
              for (std::size_t c = 0; c < C; ++c) in[c] += grad[c] * wr[c];
            } else {
              for (std::size_t c = 0; c < C; ++c) {
                T sum = T(0);
                for (std::size_t j = 0; j < M; ++j) sum += grad[c * M + j] * wr[c * M + j];
                in[c] += sum;
              }
            }
          }
      }
  });
}

// dw[kh, kw, 0, c*M + j] = sum over n, oh, ow of x[n, ih, iw, c] * dy[n, oh, ow, c*M + j] (0 for
// padded positions), one tap per thread.
template <class T>
void depthwise_backprop_filter(const geometry& g, const T* x, const T* dy, T* dw) {
  const std::size_t C = g.channels, M = g.group_filters(), O = g.filters, taps = g.k_h * g.k_w;
  std::fill_n(dw, taps * O, T(0));
  for_each_image(taps, g.batch * g.pixels() * O, [&](std::size_t tap) {
    const std::size_t kh = tap / g.k_w, kw = tap % g.k_w;
    T* acc = dw + tap * O;
    for (std::size_t n = 0; n < g.batch; ++n)
      for (std::size_t oh = 0; oh < g.out_h; ++oh)
        for (std::size_t ow = 0; ow < g.out_w; ++ow) {
          const T* grad = dy + ((n * g.out_h + oh) * g.out_w + ow) * O;
          accumulate_tap(acc, input_row(g, x, n, tap_row(g, oh, kh), tap_column(g, ow, kw)), grad, C, M);
        }
  });
}

}  // namespace symflow::ops::conv_detail
#endif  // SYMFLOW_OPS_CONV2D_DEPTHWISE_HPP
