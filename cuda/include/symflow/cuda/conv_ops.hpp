#pragma once
// conv2d and its two adjoints on the device, keyed by op type like matmul (kernel_ops.hpp): the CPU's
// algorithm (ops/conv2d.hpp) with its loops as kernels and its GEMMs on cuBLAS.
//   conv2d:                 col = im2col(x),            y  = col W
//   conv2d_backprop_filter: col = im2col(x),            dW = col^T dY   (summed over image chunks)
//   conv2d_backprop_input:  dcol = dY W^T,              dX = col2im(dcol), gathered per input element
// each once per group (group g: its input channels, its block of W's and dY's columns).
// The column matrix row (image, oh, ow) holds that output pixel's receptive field in (kh, kw, c)
// order, the row order of the HWIO filter read as a [KH*KW*C, O] matrix, so the filter needs no copy.
// col2im gathers (each input element sums the column entries copied from it) rather than scattering
// with atomics: results do not depend on scheduling.
#include <algorithm>
#include <cstddef>
#include <string>

#include <symflow/ops/conv2d.hpp>

#include "kernel_ops.hpp"

namespace symflow::cuda {
namespace dev {

// ops::conv_detail::geometry with device-friendly 64-bit fields.
struct conv_geometry {
  unsigned long long in_h, in_w, channels, k_h, k_w, out_h, out_w, stride, pad_top, pad_left, dilation, group_channels;
};

// col[e] for e < count * out_h * out_w * patch, images [first, first + count) of x, the group whose
// input channels start at c0.
template <class T>
__global__ void im2col_kernel(const T* __restrict__ x, T* __restrict__ col, conv_geometry g, unsigned long long first,
                              unsigned long long c0, unsigned long long total) {
  const unsigned long long patch = g.k_h * g.k_w * g.group_channels;
  for (unsigned long long e = blockIdx.x * 1ull * blockDim.x + threadIdx.x; e < total; e += 1ull * gridDim.x * blockDim.x) {
    const unsigned long long j = e % patch;
    unsigned long long r = e / patch;
    const unsigned long long ow = r % g.out_w;
    r /= g.out_w;
    const unsigned long long oh = r % g.out_h;
    const unsigned long long image = first + r / g.out_h;
    const unsigned long long c = j % g.group_channels;
    const unsigned long long kw = (j / g.group_channels) % g.k_w;
    const unsigned long long kh = j / (g.group_channels * g.k_w);
    const long long ih = (long long)(oh * g.stride + kh * g.dilation) - (long long)g.pad_top;
    const long long iw = (long long)(ow * g.stride + kw * g.dilation) - (long long)g.pad_left;
    T v = T(0);
    if (ih >= 0 && ih < (long long)g.in_h && iw >= 0 && iw < (long long)g.in_w)
      v = x[((image * g.in_h + (unsigned long long)ih) * g.in_w + (unsigned long long)iw) * g.channels + c0 + c];
    col[e] = v;
  }
}

// The input channels [c0, c0 + group_channels) of dx for images [first, first + count) (dx pointing at
// image `first`), e < count * in_h * in_w * group_channels: each the sum of the entries of one group's
// dcol (rows of those images only) that im2col copies from it.
template <class T>
__global__ void col2im_gather_kernel(const T* __restrict__ dcol, T* __restrict__ dx, conv_geometry g,
                                     unsigned long long c0, unsigned long long total) {
  const unsigned long long patch = g.k_h * g.k_w * g.group_channels;
  for (unsigned long long e = blockIdx.x * 1ull * blockDim.x + threadIdx.x; e < total; e += 1ull * gridDim.x * blockDim.x) {
    const unsigned long long c = e % g.group_channels;
    unsigned long long r = e / g.group_channels;
    const long long iw = (long long)(r % g.in_w);
    r /= g.in_w;
    const long long ih = (long long)(r % g.in_h);
    const unsigned long long image = r / g.in_h;
    T sum = T(0);
    for (unsigned long long kh = 0; kh < g.k_h; ++kh) {
      const long long t = ih + (long long)g.pad_top - (long long)(kh * g.dilation);
      if (t < 0 || t % (long long)g.stride != 0) continue;
      const unsigned long long oh = (unsigned long long)t / g.stride;
      if (oh >= g.out_h) continue;
      for (unsigned long long kw = 0; kw < g.k_w; ++kw) {
        const long long u = iw + (long long)g.pad_left - (long long)(kw * g.dilation);
        if (u < 0 || u % (long long)g.stride != 0) continue;
        const unsigned long long ow = (unsigned long long)u / g.stride;
        if (ow >= g.out_w) continue;
        sum += dcol[((image * g.out_h + oh) * g.out_w + ow) * patch + (kh * g.k_w + kw) * g.group_channels + c];
      }
    }
    dx[((image * g.in_h + (unsigned long long)ih) * g.in_w + (unsigned long long)iw) * g.channels + c0 + c] = sum;
  }
}

}  // namespace dev

namespace detail {

inline dev::conv_geometry device_geometry(const ops::conv_detail::geometry& g) {
  return {g.in_h, g.in_w, g.channels, g.k_h, g.k_w, g.out_h, g.out_w, g.stride, g.pad_top, g.pad_left, g.dilation, g.group_channels()};
}

// Images per column buffer: at most 2^25 entries (128 MiB of floats) however large the batch.
inline std::size_t conv_images_per_chunk(const ops::conv_detail::geometry& g) {
  const std::size_t per_image = std::max<std::size_t>(1, g.pixels() * g.patch());
  return std::clamp<std::size_t>((std::size_t(1) << 25) / per_image, 1, std::max<std::size_t>(g.batch, 1));
}

// Row-major C[m,n] = op(A) op(B) + beta C, each op a transpose when asked; lda/ldb/ldc are the
// row lengths of the matrices as stored. cuBLAS sees the column-major transposes: C^T = op(B)^T op(A)^T.
template <class T, class Ctx>
void row_major_gemm(Ctx& ctx, bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, const T* a,
                    std::size_t lda, const T* b, std::size_t ldb, T beta, T* c, std::size_t ldc) {
  constexpr std::size_t limit = std::size_t(1) << 31;
  if (m >= limit || n >= limit || k >= limit || lda >= limit || ldb >= limit || ldc >= limit)
    throw shape_error("symflow::cuda: conv2d's GEMM extents exceed cuBLAS's 32-bit limits");
  const cublasHandle_t h = cublas_handle();
  SYMFLOW_CUBLAS_CHECK(cublasSetStream(h, ctx.stream));
  constexpr cudaDataType_t type = gemm_data_type<T>;
  const cublasComputeType_t compute = gemm_compute_type<T>(ctx.allow_tf32);
  const T alpha = 1;
  SYMFLOW_CUBLAS_CHECK(cublasGemmEx(h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, int(n),
                                    int(m), int(k), &alpha, b, type, int(ldb), a, type, int(lda), &beta, c, type, int(ldc),
                                    compute, CUBLAS_GEMM_DEFAULT));
}

template <class T>
void launch_im2col(const ops::conv_detail::geometry& g, const T* x, T* col, std::size_t first, std::size_t count,
                   std::size_t group, cudaStream_t s) {
  const std::size_t total = count * g.pixels() * g.patch();
  if (total == 0) return;
  SYMFLOW_LAUNCH(dev::grid_for(total, dev::block_threads), dev::block_threads, 0, s, dev::im2col_kernel<dev::canonical_t<T>>)(
      x, col, device_geometry(g), first, group * g.group_channels(), total);
  SYMFLOW_CUDA_CHECK_LAUNCH("im2col_kernel");
}

template <class Ctx>
std::string conv_gemm_placement(const Ctx& ctx, const char* kernels) {
  return std::string(kernels) + (ctx.allow_tf32 ? " + cuBLAS GEMM (TF32 tensor cores)" : " + cuBLAS GEMM");
}

template <class T>
constexpr void check_conv_dtype() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "symflow::cuda: conv2d runs on f32 and f64");
}

}  // namespace detail

namespace detail {

template <std::size_t Stride, padding Padding, std::size_t Dilation, std::size_t Groups>
struct kernel_impl<ops::conv2d_op<Stride, Padding, Dilation, Groups>> {
  static constexpr bool available = true;
  template <class Ctx>
  static std::string placement(const Ctx& ctx) {
    return conv_gemm_placement(ctx, "im2col_kernel");
  }
  template <class T, class Ctx, std::size_t RO, class CX, class CW>
  static void run(const ops::conv2d_op<Stride, Padding, Dilation, Groups>& op, Ctx& ctx, T* out, const extents_t<RO>&, CX& x, CW& w) {
    check_conv_dtype<T>();
    const auto g = ops::conv_detail::checked_geometry("conv2d", x.extents, w.extents, op.settings);
    const std::size_t rows = g.pixels(), patch = g.patch(), outputs = g.batch * rows * g.filters;
    if (outputs == 0) return;
    if (patch == 0) {
      SYMFLOW_CUDA_CHECK(cudaMemsetAsync(out, 0, outputs * sizeof(T), ctx.stream));
      return;
    }
    const device_leaf<T> lx = materialize(x, ctx, true), lw = materialize(w, ctx, true);
    const std::size_t chunk = conv_images_per_chunk(g);
    T* col = ctx.template allocate<T>(chunk * rows * patch);
    for (std::size_t n0 = 0; n0 < g.batch; n0 += chunk) {
      const std::size_t count = std::min(chunk, g.batch - n0);
      for (std::size_t group = 0; group < g.groups; ++group) {
        const std::size_t o0 = group * g.group_filters();
        launch_im2col(g, lx.data, col, n0, count, group, ctx.stream);
        row_major_gemm<T>(ctx, false, false, count * rows, g.group_filters(), patch, col, patch, lw.data + o0, g.filters, T(0),
                          out + n0 * rows * g.filters + o0, g.filters);
      }
    }
  }
};

template <std::size_t Stride, padding Padding, std::size_t Dilation, std::size_t Groups>
struct kernel_impl<ops::conv2d_backprop_filter_op<Stride, Padding, Dilation, Groups>> {
  static constexpr bool available = true;
  template <class Ctx>
  static std::string placement(const Ctx& ctx) {
    return conv_gemm_placement(ctx, "im2col_kernel");
  }
  template <class T, class Ctx, std::size_t RO, class CX, class CG, class CW>
  static void run(const ops::conv2d_backprop_filter_op<Stride, Padding, Dilation, Groups>& op, Ctx& ctx, T* out, const extents_t<RO>&, CX& x,
                  CG& dy, CW& like) {
    check_conv_dtype<T>();
    const auto g = ops::conv_detail::checked_geometry("conv2d_backprop_filter", x.extents, like.extents, op.settings);
    const std::size_t rows = g.pixels(), patch = g.patch(), outputs = patch * g.filters;
    if (outputs == 0) return;
    if (rows == 0 || g.batch == 0) {
      SYMFLOW_CUDA_CHECK(cudaMemsetAsync(out, 0, outputs * sizeof(T), ctx.stream));
      return;
    }
    const device_leaf<T> lx = materialize(x, ctx, true), ldy = materialize(dy, ctx, true);
    const std::size_t chunk = conv_images_per_chunk(g);
    T* col = ctx.template allocate<T>(chunk * rows * patch);
    for (std::size_t n0 = 0; n0 < g.batch; n0 += chunk) {
      const std::size_t count = std::min(chunk, g.batch - n0);
      for (std::size_t group = 0; group < g.groups; ++group) {
        const std::size_t o0 = group * g.group_filters();
        launch_im2col(g, lx.data, col, n0, count, group, ctx.stream);
        row_major_gemm<T>(ctx, true, false, patch, g.group_filters(), count * rows, col, patch,
                          ldy.data + n0 * rows * g.filters + o0, g.filters, n0 == 0 ? T(0) : T(1), out + o0, g.filters);
      }
    }
  }
};

template <std::size_t Stride, padding Padding, std::size_t Dilation, std::size_t Groups>
struct kernel_impl<ops::conv2d_backprop_input_op<Stride, Padding, Dilation, Groups>> {
  static constexpr bool available = true;
  template <class Ctx>
  static std::string placement(const Ctx& ctx) {
    return conv_gemm_placement(ctx, "col2im_gather_kernel");
  }
  template <class T, class Ctx, std::size_t RO, class CG, class CW, class CX>
  static void run(const ops::conv2d_backprop_input_op<Stride, Padding, Dilation, Groups>& op, Ctx& ctx, T* out, const extents_t<RO>&, CG& dy,
                  CW& w, CX& like) {
    check_conv_dtype<T>();
    const auto g = ops::conv_detail::checked_geometry("conv2d_backprop_input", like.extents, w.extents, op.settings);
    const std::size_t rows = g.pixels(), patch = g.patch(), outputs = g.batch * g.input_image();
    if (outputs == 0) return;
    if (rows == 0 || patch == 0 || g.filters == 0) {
      SYMFLOW_CUDA_CHECK(cudaMemsetAsync(out, 0, outputs * sizeof(T), ctx.stream));
      return;
    }
    const device_leaf<T> ldy = materialize(dy, ctx, true), lw = materialize(w, ctx, true);
    const std::size_t chunk = conv_images_per_chunk(g);
    T* dcol = ctx.template allocate<T>(chunk * rows * patch);
    for (std::size_t n0 = 0; n0 < g.batch; n0 += chunk) {
      const std::size_t count = std::min(chunk, g.batch - n0);
      for (std::size_t group = 0; group < g.groups; ++group) {
        const std::size_t o0 = group * g.group_filters();
        row_major_gemm<T>(ctx, false, true, count * rows, patch, g.group_filters(), ldy.data + n0 * rows * g.filters + o0,
                          g.filters, lw.data + o0, g.filters, T(0), dcol, patch);
        const std::size_t total = count * g.in_h * g.in_w * g.group_channels();
        SYMFLOW_LAUNCH(dev::grid_for(total, dev::block_threads), dev::block_threads, 0, ctx.stream,
                       dev::col2im_gather_kernel<dev::canonical_t<T>>)(
            dcol, out + n0 * g.input_image(), device_geometry(g), group * g.group_channels(), total);
        SYMFLOW_CUDA_CHECK_LAUNCH("col2im_gather_kernel");
      }
    }
  }
};

}  // namespace detail
}  // namespace symflow::cuda
