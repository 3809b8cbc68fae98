#pragma once
// Device implementations of the kernel ops (node_kind::kernel), keyed by op type on the CUDA side:
// matmul through cuBLAS, concat as strided device copies, one_hot as a scatter kernel. A kernel op
// with no device implementation here runs its own run_cpu on host copies of its operands (correct,
// slow: one synchronisation per call). conv2d and its adjoints have theirs in conv_ops.hpp; an
// output act(matmul + bias) runs as one cuBLASLt GEMM with an epilogue (gemm_epilogue.hpp).
#include <cublas_v2.h>

#include <cstring>
#include <string>

#include <symflow/ops/concat.hpp>
#include <symflow/ops/dropout.hpp>
#include <symflow/ops/matmul.hpp>
#include <symflow/ops/one_hot.hpp>

#include "device_code.hpp"  // SYMFLOW_LAUNCH
#include "evaluators.hpp"

namespace symflow::cuda {

namespace detail {
[[noreturn]] inline void throw_cublas(cublasStatus_t e, const char* what, const char* file, int line) {
  throw cuda_error(std::string("symflow::cuda: ") + what + " failed: " + cublasGetStatusName(e) + " (" +
                   cublasGetStatusString(e) + ") at " + file + ":" + std::to_string(line));
}
}  // namespace detail

#define SYMFLOW_CUBLAS_CHECK(call)                                                          \
  do {                                                                                      \
    const cublasStatus_t symflow_cublas_status_ = (call);                                   \
    if (symflow_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                    \
      ::symflow::cuda::detail::throw_cublas(symflow_cublas_status_, #call, __FILE__, __LINE__); \
  } while (0)

namespace detail {

// One cuBLAS handle per thread and device, created on first use and destroyed when the thread ends
// (thread-local objects are destroyed before the runtime's own teardown at exit).
inline cublasHandle_t cublas_handle() {
  struct handles {
    cublasHandle_t by_device[8] = {};
    ~handles() {
      for (cublasHandle_t& h : by_device)
        if (h) (void)cublasDestroy(h);
    }
  };
  static thread_local handles cache;
  int dev = 0;
  SYMFLOW_CUDA_CHECK(cudaGetDevice(&dev));
  if (dev >= 8) throw cuda_error("symflow::cuda: devices past the eighth are not supported");
  cublasHandle_t& h = cache.by_device[dev];
  if (!h) SYMFLOW_CUBLAS_CHECK(cublasCreate(&h));
  return h;
}

// cuBLAS's element type and compute type for a GEMM over T (f32 or f64): f32 in full FP32 unless the
// evaluation allows TF32 tensor cores.
template <class T>
inline constexpr cudaDataType_t gemm_data_type = std::is_same_v<T, double> ? CUDA_R_64F : CUDA_R_32F;
template <class T>
cublasComputeType_t gemm_compute_type(bool allow_tf32) {
  if constexpr (std::is_same_v<T, double>) return CUBLAS_COMPUTE_64F;
  else return allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

// How a matrix operand (the last two axes of a leaf) is laid out for cuBLAS: row-major (unit
// column stride) or column-major (unit row stride), with its leading dimension and batch stride.
struct gemm_operand {
  bool ok = false;
  bool column_major = false;
  std::size_t ld = 0;
  std::size_t batch_stride = 0;
};
template <class T>
gemm_operand gemm_layout(const device_leaf<T>& l) {
  const std::size_t r = l.rank;
  const std::size_t rows = l.extents[r - 2], cols = l.extents[r - 1];
  const std::size_t sr = l.strides[r - 2], sc = l.strides[r - 1];
  gemm_operand g;
  g.batch_stride = r == 3 ? (l.extents[0] == 1 ? 0 : l.strides[0]) : 0;
  if ((cols == 1 || sc == 1) && (rows == 1 || sr >= cols)) {
    g.ok = true;
    g.ld = rows == 1 ? std::max<std::size_t>(cols, 1) : sr;
  } else if ((rows == 1 || sr == 1) && (cols == 1 || sc >= rows)) {
    g.ok = true;
    g.column_major = true;
    g.ld = cols == 1 ? std::max<std::size_t>(rows, 1) : sc;
  }
  g.ok = g.ok && g.ld < (std::size_t(1) << 31);
  return g;
}

template <class Op>
struct kernel_impl {
  static constexpr bool available = false;
};

// C = A B, row-major: cuBLAS (column-major) computes C^T = B^T A^T. Operands are used in place when
// their matrices are row- or column-major (a transposed view costs no copy); f32 runs in full FP32
// unless options::allow_tf32 is set.
template <>
struct kernel_impl<ops::matmul_op> {
  static constexpr bool available = true;
  template <class Ctx>
  static std::string placement(const Ctx& ctx) {
    return ctx.allow_tf32 ? "cuBLAS GEMM (TF32 tensor cores)" : "cuBLAS GEMM (FP32)";
  }
  template <class T, class Ctx, std::size_t RO, class CA, class CB>
  static void run(const ops::matmul_op&, Ctx& ctx, T* out, const extents_t<RO>& oe, CA& a, CB& b) {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "symflow::cuda: matmul runs on f32 and f64");
    constexpr std::size_t RA = CA::rank, RB = CB::rank;
    const std::size_t M = oe[RO - 2], N = oe[RO - 1], K = a.extents[RA - 1];
    const std::size_t batches = RO == 3 ? oe[0] : 1;
    if (M == 0 || N == 0 || batches == 0) return;
    if (K == 0) {
      SYMFLOW_CUDA_CHECK(cudaMemsetAsync(out, 0, batches * M * N * sizeof(T), ctx.stream));
      return;
    }
    device_leaf<T> la = materialize(a, ctx, false), lb = materialize(b, ctx, false);
    gemm_operand ga = gemm_layout(la), gb = gemm_layout(lb);
    if (!ga.ok) {
      la = materialize(a, ctx, true);
      ga = gemm_layout(la);
    }
    if (!gb.ok) {
      lb = materialize(b, ctx, true);
      gb = gemm_layout(lb);
    }
    if (M >= (std::size_t(1) << 31) || N >= (std::size_t(1) << 31) || K >= (std::size_t(1) << 31))
      throw shape_error("symflow::cuda: matmul extents exceed cuBLAS's 32-bit limits");
    const cublasHandle_t h = cublas_handle();
    SYMFLOW_CUBLAS_CHECK(cublasSetStream(h, ctx.stream));
    constexpr cudaDataType_t type = gemm_data_type<T>;
    const cublasComputeType_t compute = gemm_compute_type<T>(ctx.allow_tf32);
    const T alpha = 1, beta = 0;
    const cublasOperation_t op_b = gb.column_major ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_a = ga.column_major ? CUBLAS_OP_T : CUBLAS_OP_N;
    // [B,M,K] x [K,N] with A's batches stacked row-major: one GEMM over B*M rows.
    const bool fold = RA == 3 && RB == 2 && !ga.column_major && ga.batch_stride == M * ga.ld;
    if (batches == 1 || fold) {
      const std::size_t rows = fold ? batches * M : M;
      SYMFLOW_CUBLAS_CHECK(cublasGemmEx(h, op_b, op_a, int(N), int(rows), int(K), &alpha, lb.data, type, int(gb.ld),
                                        la.data, type, int(ga.ld), &beta, out, type, int(N), compute,
                                        CUBLAS_GEMM_DEFAULT));
    } else {
      SYMFLOW_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
          h, op_b, op_a, int(N), int(M), int(K), &alpha, lb.data, type, int(gb.ld),
          (long long)(RB == 3 ? gb.batch_stride : 0), la.data, type, int(ga.ld), (long long)ga.batch_stride, &beta,
          out, type, int(N), (long long)(M * N), int(batches), compute, CUBLAS_GEMM_DEFAULT));
    }
  }
};

// Each operand is a contiguous block of `inner` elements per outer index: one 2-D copy per operand.
template <std::size_t Axis>
struct kernel_impl<ops::concat_op<Axis>> {
  static constexpr bool available = true;
  template <class Ctx>
  static std::string placement(const Ctx&) {
    return "one cudaMemcpy2DAsync per operand";
  }
  template <class T, class Ctx, std::size_t RO, class... C>
  static void run(const ops::concat_op<Axis>&, Ctx& ctx, T* out, const extents_t<RO>& oe, C&... operands) {
    std::size_t outer = 1, inner = 1;
    for (std::size_t i = 0; i < Axis; ++i) outer *= oe[i];
    for (std::size_t i = Axis + 1; i < RO; ++i) inner *= oe[i];
    const std::size_t out_row = oe[Axis] * inner;
    std::size_t column = 0;
    auto copy = [&](auto& operand) {
      const device_leaf<T> l = materialize(operand, ctx, true);
      const std::size_t block = l.extents[Axis] * inner;
      if (block && outer)
        SYMFLOW_CUDA_CHECK(cudaMemcpy2DAsync(out + column, out_row * sizeof(T), l.data, block * sizeof(T),
                                             block * sizeof(T), outer, cudaMemcpyDeviceToDevice, ctx.stream));
      column += block;
    };
    (copy(operands), ...);
  }
};

template <std::size_t Depth, class To>
struct kernel_impl<ops::one_hot_op<Depth, To>> {
  static constexpr bool available = true;
  template <class Ctx>
  static std::string placement(const Ctx&) {
    return "cudaMemsetAsync + one_hot_kernel (block " + std::to_string(dev::block_threads) + ")";
  }
  template <class T, class Ctx, std::size_t RO, class C>
  static void run(const ops::one_hot_op<Depth, To>&, Ctx& ctx, T* out, const extents_t<RO>& oe, C& labels) {
    const std::size_t total = element_count<RO>(oe);
    if (total == 0) return;
    SYMFLOW_CUDA_CHECK(cudaMemsetAsync(out, 0, total * sizeof(T), ctx.stream));
    const auto l = materialize(labels, ctx, true);
    const std::size_t n = l.size();
    using L = typename C::value_type;
    SYMFLOW_LAUNCH(dev::grid_for(n, dev::block_threads), dev::block_threads, 0, ctx.stream, dev::one_hot_kernel<dev::canonical_t<T>, dev::canonical_t<L>>)(
        out, l.data, n, Depth);
    SYMFLOW_CUDA_CHECK_LAUNCH("one_hot_kernel");
  }
};

// dropout: one pass over the (contiguous) operand, with the CPU's mask (dropout_keeps).
template <>
struct kernel_impl<ops::dropout_op> {
  static constexpr bool available = true;
  template <class Ctx>
  static std::string placement(const Ctx&) {
    return "dropout_kernel (block " + std::to_string(dev::block_threads) + ")";
  }
  template <class T, class Ctx, std::size_t RO, class C>
  static void run(const ops::dropout_op& op, Ctx& ctx, T* out, const extents_t<RO>& oe, C& x) {
    const std::size_t n = element_count<RO>(oe);
    if (n == 0) return;
    const auto l = materialize(x, ctx, true);
    const T scale = T(1.0 / (1.0 - op.rate));  // as ops::dropout_detail::run: in double, then rounded
    SYMFLOW_LAUNCH(dev::grid_for(n, dev::block_threads), dev::block_threads, 0, ctx.stream,
                   dev::dropout_kernel<dev::canonical_t<T>>)(out, l.data, n, op.rate, std::uint64_t(op.seed), scale);
    SYMFLOW_CUDA_CHECK_LAUNCH("dropout_kernel");
  }
};

// Any other kernel op: its run_cpu on host copies of its operands (operands it does not read are
// passed as extents only), then the result is uploaded.
template <class Op, class T, class Ctx, std::size_t RO, class... C>
void run_on_host(const Op& op, Ctx& ctx, T* out, const extents_t<RO>& oe, C&... operands) {
  constexpr bool contiguous = [] {
    if constexpr (requires { Op::contiguous_operands; }) return bool(Op::contiguous_operands);
    else return true;
  }();
  std::vector<aligned_buffer<unsigned char>> copies;
  auto host_view = [&]<std::size_t I>(auto& operand, std::integral_constant<std::size_t, I>) {
    using O = std::remove_cvref_t<decltype(operand)>;
    using V = typename O::value_type;
    constexpr std::size_t R = O::rank;
    if constexpr (reads_operand<Op, I>()) {
      const device_leaf<V> l = materialize(operand, ctx, contiguous);
      copies.emplace_back(l.span() * sizeof(V));
      if (l.span())
        SYMFLOW_CUDA_CHECK(cudaMemcpyAsync(copies.back().data(), l.data, l.span() * sizeof(V), cudaMemcpyDeviceToHost,
                                           ctx.stream));
      return tensor_view<const V, dyn_shape<R>>(reinterpret_cast<const V*>(copies.back().data()),
                                                l.template extents_as<R>(), l.template strides_as<R>());
    } else {
      return tensor_view<const V, dyn_shape<R>>(nullptr, operand.extents);
    }
  };
  copies.reserve(sizeof...(C));
  auto views = [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::tuple{host_view(operands, std::integral_constant<std::size_t, I>{})...};
  }(std::index_sequence_for<C...>{});
  SYMFLOW_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
  tensor<T, dyn_shape<RO>> result(oe, uninitialized);
  std::apply([&](const auto&... v) { op.template run_cpu<T>(tensor_view<T, dyn_shape<RO>>(result.data(), oe), v...); },
             views);
  if (result.size())
    SYMFLOW_CUDA_CHECK(
        cudaMemcpyAsync(out, result.data(), result.size() * sizeof(T), cudaMemcpyHostToDevice, ctx.stream));
  SYMFLOW_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));  // `result` is freed on return
}

// An op may bring its own device implementation: a member
//   template <class T> void run_cuda(device_view<T, dyn_shape<R>> out, cudaStream_t stream,
//                                    device_view<const U, dyn_shape<Ri>>... operands) const;
// (operands materialised, contiguous when the op asks for it). It is preferred when present.
template <class Op, class T, class Ctx, std::size_t RO, class... C>
void run_op_cuda(const Op& op, Ctx& ctx, T* out, const extents_t<RO>& oe, C&... operands) {
  constexpr bool contiguous = [] {
    if constexpr (requires { Op::contiguous_operands; }) return bool(Op::contiguous_operands);
    else return true;
  }();
  op.template run_cuda<T>(device_view<T, dyn_shape<RO>>(out, oe), ctx.stream, [&](auto& o) {
    using O = std::remove_cvref_t<decltype(o)>;
    const auto l = materialize(o, ctx, contiguous);
    return device_view<const typename O::value_type, dyn_shape<O::rank>>(l.data, l.template extents_as<O::rank>(),
                                                                        l.template strides_as<O::rank>());
  }(operands)...);
}

template <class Op, class T, std::size_t RO, class... C>
concept has_run_cuda = requires(const Op& op, device_view<T, dyn_shape<RO>> out, cudaStream_t s,
                                device_view<const typename C::value_type, dyn_shape<C::rank>>... in) {
  op.template run_cuda<T>(out, s, in...);
};

// A kernel op that reads none of its operands (reduced_count: a function of extents only) and has a
// small result: run_cpu on the host at planning time, and a kernel whose arguments carry the values
// writes them (no host round trip, and it can be captured in a CUDA graph).
template <class Op, std::size_t N, std::size_t... I>
constexpr bool reads_no_operand(std::index_sequence<I...>) {
  return (!reads_operand<Op, I>() && ...);
}
template <class Op, class T, class Ctx, std::size_t RO, class... C>
bool run_from_extents(const Op& op, Ctx& ctx, T* out, const extents_t<RO>& oe, C&... operands) {
  constexpr std::size_t max_values = dev::small_values<T>::capacity;
  const std::size_t n = element_count<RO>(oe);
  if (n > max_values) return false;
  tensor<T, dyn_shape<RO>> result(oe, uninitialized);
  op.template run_cpu<T>(tensor_view<T, dyn_shape<RO>>(result.data(), oe),
                         tensor_view<const typename C::value_type, dyn_shape<C::rank>>(nullptr, operands.extents)...);
  dev::small_values<T> values{};
  for (std::size_t k = 0; k < n; ++k) values.v[k] = result.data()[k];
  dev::set_values<T>(out, n, values, ctx.stream);
  return true;
}

template <class Node, class... C>
template <class Ctx>
void kernel_eval<Node, C...>::compute_into(T* out, Ctx& ctx) {
  constexpr std::size_t RO = Node::rank;
  auto log = [&](const std::string& how) {
    place([&] {
      return std::string("kernel op ") + this->source.text() + "(" + operand_list() + ") -> " +
             value_type_string<T>(this->extents) + ", " + how + ", on " + current_device_name();
    });
  };
  const profile_region timed(ctx.stream, [&] {
    return std::string("kernel op ") + this->source.text() + "(" + operand_list() + ") -> " +
           value_type_string<T>(this->extents);
  });
  std::apply(
      [&](auto&... o) {
        if constexpr (has_run_cuda<Op, T, RO, C...>) {
          log("the op's own run_cuda");
          run_op_cuda(op, ctx, out, this->extents, o...);
        } else if constexpr (kernel_impl<Op>::available) {
          log(kernel_impl<Op>::placement(ctx));
          kernel_impl<Op>::template run<T>(op, ctx, out, this->extents, o...);
        } else if constexpr (reads_no_operand<Op, sizeof...(C)>(std::index_sequence_for<C...>{})) {
          if (element_count<RO>(this->extents) <= dev::small_values<T>::capacity) {
            log("values computed from extents on the host, written by set_values_kernel (grid 1, block 32)");
            run_from_extents(op, ctx, out, this->extents, o...);
          } else {
            log("run_cpu on the host (synchronises)");
            run_on_host(op, ctx, out, this->extents, o...);
          }
        } else {
          log("run_cpu on the host (synchronises)");
          run_on_host(op, ctx, out, this->extents, o...);
        }
      },
      operands);
}

}  // namespace detail
}  // namespace symflow::cuda
