#pragma once
// Max and average pooling and their backward ops on the device, keyed by op type like matmul
// (kernel_ops.hpp): the CPU's algorithm (ops/pool2d_geometry.hpp) with a thread per output element,
// the same geometry object (its axis arithmetic is constexpr, so it runs on the device too) and the
// same operations in the same order (no multiply-add to contract), so results are the CPU's: a window's maximum by the strict
// scan from its first element (ties keep the first maximum; a NaN counts only as the first element),
// an average summed row by row from 0 and then divided. The backward ops gather instead of
// scattering: each input element sums, in the CPU's window order, what the windows holding it send
// it, so no atomics and no dependence on scheduling.
#include <cstddef>
#include <string>

#include <symflow/ops/pool2d.hpp>

#include "kernel_ops.hpp"

namespace symflow::cuda {
namespace dev {

using pool_geometry = ops::pool_detail::geometry;
using pool_axis = ops::pool_detail::axis_geometry;

// Windows [lo, hi] of an axis are the only ones that may hold input position i.
SYMFLOW_DEVICE bool windows_near(const pool_axis& a, unsigned long long i, unsigned long long& lo, unsigned long long& hi) {
  const long long p = (long long)i + (long long)a.before, reach = (long long)((a.window - 1) * a.dilation);
  const long long first = p - reach <= 0 ? 0 : (p - reach + (long long)a.stride - 1) / (long long)a.stride;
  long long last = p / (long long)a.stride;
  if (last > (long long)a.out - 1) last = (long long)a.out - 1;
  lo = (unsigned long long)first;
  hi = (unsigned long long)last;
  return first <= last;
}
// Whether window o of the axis holds input position i.
SYMFLOW_DEVICE bool window_holds(const pool_axis& a, unsigned long long o, unsigned long long i) {
  const long long d = (long long)i + (long long)a.before - (long long)(o * a.stride);
  return d >= 0 && d % (long long)a.dilation == 0 && d / (long long)a.dilation < (long long)a.window;
}

// Element c of window (n, oh, ow): its first input offset (channel c included) and its extent.
struct pool_window {
  unsigned long long base, rows, cols, row_step, col_step;
};
SYMFLOW_DEVICE pool_window window_at(const pool_geometry& g, unsigned long long n, unsigned long long oh,
                                     unsigned long long ow, unsigned long long c) {
  const unsigned long long C = g.channels;
  return {((n * g.h.in + g.h.first(oh)) * g.w.in + g.w.first(ow)) * C + c, g.h.count(oh), g.w.count(ow),
          g.h.dilation * g.w.in * C, g.w.dilation * C};
}
SYMFLOW_DEVICE unsigned long long average_divisor(const pool_geometry& g, unsigned long long oh, unsigned long long ow,
                                                  const pool_window& w) {
  return g.count_include_pad ? g.h.padded_count(oh) * g.w.padded_count(ow) : w.rows * w.cols;
}

// Output element e = ((n * OH + oh) * OW + ow) * C + c.
template <class T, bool Max>
__global__ void __launch_bounds__(block_threads) pool_forward_kernel(const T* __restrict__ x, T* __restrict__ y,
                                                                     pool_geometry g, unsigned long long total) {
  for (unsigned long long e = blockIdx.x * 1ull * block_threads + threadIdx.x; e < total; e += 1ull * gridDim.x * block_threads) {
    const unsigned long long c = e % g.channels, p = e / g.channels, ow = p % g.w.out, oh = p / g.w.out % g.h.out,
                             n = p / g.w.out / g.h.out;
    const pool_window w = window_at(g, n, oh, ow, c);
    T acc = Max ? x[w.base] : T(0);
    for (unsigned long long r = 0; r < w.rows; ++r)
      for (unsigned long long q = 0; q < w.cols; ++q) {
        const T v = x[w.base + r * w.row_step + q * w.col_step];
        if constexpr (Max) acc = v > acc ? v : acc;
        else acc += v;
      }
    if constexpr (!Max) acc /= T(average_divisor(g, oh, ow, w));
    y[e] = acc;
  }
}

// Input element e = ((n * H + ih) * W + iw) * C + c gathers dy from the windows holding it, in the
// CPU's order (oh, then ow): all of a window's average share, a maximum's dy where e is its first maximum.
template <class T, bool Max>
__global__ void __launch_bounds__(block_threads) pool_backward_kernel(const T* __restrict__ dy, const T* __restrict__ x,
                                                                      T* __restrict__ dx, pool_geometry g,
                                                                      unsigned long long total) {
  for (unsigned long long e = blockIdx.x * 1ull * block_threads + threadIdx.x; e < total; e += 1ull * gridDim.x * block_threads) {
    const unsigned long long c = e % g.channels, p = e / g.channels, iw = p % g.w.in, ih = p / g.w.in % g.h.in,
                             n = p / g.w.in / g.h.in;
    T acc = T(0);
    unsigned long long oh0, oh1, ow0, ow1;
    if (windows_near(g.h, ih, oh0, oh1) && windows_near(g.w, iw, ow0, ow1))
      for (unsigned long long oh = oh0; oh <= oh1; ++oh) {
        if (!window_holds(g.h, oh, ih)) continue;
        for (unsigned long long ow = ow0; ow <= ow1; ++ow) {
          if (!window_holds(g.w, ow, iw)) continue;
          const pool_window w = window_at(g, n, oh, ow, c);
          const T grad = dy[((n * g.h.out + oh) * g.w.out + ow) * g.channels + c];
          if constexpr (Max) {
            T top = x[w.base];
            unsigned long long best = w.base;
            for (unsigned long long k = 1; k < w.rows * w.cols; ++k) {
              const unsigned long long at = w.base + (k / w.cols) * w.row_step + (k % w.cols) * w.col_step;
              if (x[at] > top) {
                top = x[at];
                best = at;
              }
            }
            if (best == e) acc += grad;
          } else {
            acc += grad / T(average_divisor(g, oh, ow, w));
          }
        }
      }
    dx[e] = acc;
  }
}

}  // namespace dev

namespace detail {

// The four ops share one implementation: the forward or backward kernel, max or average.
template <class Op, bool Max, bool Backward>
struct pool_kernel_impl {
  static constexpr bool available = true;
  template <class Ctx>
  static std::string placement(const Ctx&) {
    return std::string(Backward ? "pool_backward_kernel" : "pool_forward_kernel") + " (" + (Max ? "max" : "average") +
           ", a thread per element, block " + std::to_string(dev::block_threads) + ")";
  }
  template <class T, class Ctx, std::size_t RO, class CX>
  static void run(const Op&, Ctx& ctx, T* out, const extents_t<RO>& oe, CX& x) {
    const device_leaf<T> lx = materialize(x, ctx, true);
    const extents_t<4> xe{lx.extents[0], lx.extents[1], lx.extents[2], lx.extents[3]};
    const auto g = ops::pool_detail::checked_geometry(Op::name, Op::name, xe, Op::settings);
    const std::size_t total = element_count<RO>(oe);
    if (total == 0) return;
    SYMFLOW_LAUNCH(dev::grid_for(total, dev::block_threads), dev::block_threads, 0, ctx.stream,
                   dev::pool_forward_kernel<dev::canonical_t<T>, Max>)(lx.data, out, g, total);
    SYMFLOW_CUDA_CHECK_LAUNCH("pool_forward_kernel");
  }
  template <class T, class Ctx, std::size_t RO, class CG, class CX>
  static void run(const Op&, Ctx& ctx, T* out, const extents_t<RO>& oe, CG& dy, CX& x) {
    const auto g = ops::pool_detail::checked_geometry(Op::name, Op::name, oe, Op::settings);
    const std::size_t total = element_count<RO>(oe);
    if (total == 0) return;
    const device_leaf<T> ldy = materialize(dy, ctx, true);
    const T* x_data = nullptr;  // the average's adjoint reads only x's extents
    device_leaf<T> lx;
    if constexpr (Max) {
      lx = materialize(x, ctx, true);
      x_data = lx.data;
    }
    SYMFLOW_LAUNCH(dev::grid_for(total, dev::block_threads), dev::block_threads, 0, ctx.stream,
                   dev::pool_backward_kernel<dev::canonical_t<T>, Max>)(ldy.data, x_data, out, g, total);
    SYMFLOW_CUDA_CHECK_LAUNCH("pool_backward_kernel");
  }
};

template <std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, std::size_t PH, std::size_t PW, pool_options O,
          std::size_t DH, std::size_t DW>
struct kernel_impl<ops::max_pool2d_op<KH, KW, SH, SW, PH, PW, O, DH, DW>>
    : pool_kernel_impl<ops::max_pool2d_op<KH, KW, SH, SW, PH, PW, O, DH, DW>, true, false> {};
template <std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, std::size_t PH, std::size_t PW, pool_options O,
          std::size_t DH, std::size_t DW>
struct kernel_impl<ops::avg_pool2d_op<KH, KW, SH, SW, PH, PW, O, DH, DW>>
    : pool_kernel_impl<ops::avg_pool2d_op<KH, KW, SH, SW, PH, PW, O, DH, DW>, false, false> {};
template <std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, std::size_t PH, std::size_t PW, pool_options O,
          std::size_t DH, std::size_t DW>
struct kernel_impl<ops::max_pool2d_backward_op<KH, KW, SH, SW, PH, PW, O, DH, DW>>
    : pool_kernel_impl<ops::max_pool2d_backward_op<KH, KW, SH, SW, PH, PW, O, DH, DW>, true, true> {};
template <std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, std::size_t PH, std::size_t PW, pool_options O,
          std::size_t DH, std::size_t DW>
struct kernel_impl<ops::avg_pool2d_backward_op<KH, KW, SH, SW, PH, PW, O, DH, DW>>
    : pool_kernel_impl<ops::avg_pool2d_backward_op<KH, KW, SH, SW, PH, PW, O, DH, DW>, false, true> {};

}  // namespace detail
}  // namespace symflow::cuda
