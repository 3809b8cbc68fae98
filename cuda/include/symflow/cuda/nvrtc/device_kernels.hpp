#pragma once
// Device implementations of kernel ops for graph values run on the GPU (graph_runner.hpp).
#include <cublas_v2.h>

#include <algorithm>
#include <string>
#include <vector>

#include <symflow/ir/value.hpp>
#include <symflow/ops/matmul.hpp>

#include "compiler.hpp"

namespace symflow::cuda {

// Device implementations of kernel ops for the graph runner, keyed by the op's C++ type (as
// kernel_impl<Op> in kernel_ops.hpp is for compiled expressions; the op is found through the
// registry, never by a name written here). `run` returns false for a case it does not handle, which
// then runs on the host. Operands and result are dense, row-major device memory.
template <class Op>
struct graph_device_kernel {
  static constexpr bool available = false;
};

// matmul through cuBLAS: [..., M, K] x [K, N] (leading axes of the left operand folded into M), f32 in
// full FP32 (no TF32) and f64. Batched right operands run on the host.
template <>
struct graph_device_kernel<ops::matmul_op> {
  static constexpr bool available = true;
  static bool run(cublasHandle_t h, dtype type, const std::vector<runtime_extents>& in, const std::vector<const void*>& ptr,
                  const runtime_extents& out, void* result) {
    if (in.size() != 2 || in[0].size() < 2 || in[1].size() != 2) return false;
    if (type != dtype::f32 && type != dtype::f64) return false;
    const std::size_t K = in[0].back(), N = in[1][1], M = K ? element_count(in[0]) / K : element_count(out) / std::max<std::size_t>(N, 1);
    const std::size_t limit = 0x7fffffff;
    if (M > limit || N > limit || K > limit || in[1][0] != K) return false;
    const std::size_t bytes = element_count(out) * dtype_size(type);
    if (!bytes) return true;
    if (!K) {
      nvrtc_detail::check_cuda(cudaMemset(result, 0, bytes), "cudaMemset");
      return true;
    }
    // Row-major C = A B is column-major C^T = B^T A^T: B as an N x K column-major matrix (ld N), A as
    // K x M (ld K), C as N x M (ld N).
    cublasStatus_t st;
    if (type == dtype::f32) {
      const float one = 1.f, zero = 0.f;
      st = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, int(N), int(M), int(K), &one, static_cast<const float*>(ptr[1]), int(N),
                       static_cast<const float*>(ptr[0]), int(K), &zero, static_cast<float*>(result), int(N));
    } else {
      const double one = 1., zero = 0.;
      st = cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, int(N), int(M), int(K), &one, static_cast<const double*>(ptr[1]), int(N),
                       static_cast<const double*>(ptr[0]), int(K), &zero, static_cast<double*>(result), int(N));
    }
    if (st != CUBLAS_STATUS_SUCCESS) throw nvrtc_error("graph_runner: cuBLAS GEMM failed with status " + std::to_string(int(st)));
    return true;
  }
};

}  // namespace symflow::cuda
