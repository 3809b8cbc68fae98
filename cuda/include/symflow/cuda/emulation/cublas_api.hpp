#pragma once
// The cuBLAS and cuBLASLt calls the backend makes, answered on the host for the emulation build
// (cuda/emulation/include/cublas_v2.h and cublasLt.h forward here), computed with Eigen on the
// emulated device memory. Arguments are checked as cuBLAS documents them — sizes not negative,
// leading dimensions at least the stored rows, compute and data types that go together, every
// element the call reads or writes inside a device allocation — and a violation is the status
// cuBLAS returns (CUBLAS_STATUS_INVALID_VALUE), not a wrong result. With beta == 0 the output is
// not read, so poison in it does not leak into the result, as on a GPU. The work goes on the
// handle's stream: run at once, or recorded by a capture.
#include <Eigen/Core>

#include <cstdint>
#include <type_traits>

#include "runtime_api.hpp"

enum cudaDataType_t { CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_R_16F = 2, CUDA_R_32I = 10, CUDA_R_16BF = 14 };
enum cublasStatus_t {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_NOT_SUPPORTED = 15,
};
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 };
enum cublasComputeType_t { CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_32F_FAST_TF32 = 77, CUBLAS_COMPUTE_64F = 70 };
enum cublasGemmAlgo_t { CUBLAS_GEMM_DEFAULT = -1 };

struct cublasContext {
  cudaStream_t stream = nullptr;
};
using cublasHandle_t = cublasContext*;

namespace symflow::cuda::emulation::blas_detail {

inline bool column_major_fits(const void* p, std::size_t element, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  if (rows == 0 || cols == 0) return true;
  const std::size_t last = std::size_t(ld) * std::size_t(cols - 1) + std::size_t(rows);
  return device_memory::instance().holds(p, last * element);
}
inline bool types_agree(cublasComputeType_t compute, cudaDataType_t type) {
  if (compute == CUBLAS_COMPUTE_64F) return type == CUDA_R_64F;
  if (compute == CUBLAS_COMPUTE_32F || compute == CUBLAS_COMPUTE_32F_FAST_TF32) return type == CUDA_R_32F;
  return false;
}

// D = alpha op(A) op(B) + beta C (column-major; C and D may be the same memory), then `finish` on
// each element of D with its row.
template <class T, class Finish>
void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a, std::int64_t lda,
          const T* b, std::int64_t ldb, T beta, const T* c, std::int64_t ldc, T* d, std::int64_t ldd, Finish finish) {
  using matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
  using view = Eigen::Map<const matrix, 0, Eigen::OuterStride<>>;
  const view A(a, ta ? k : m, ta ? m : k, Eigen::OuterStride<>(lda));
  const view B(b, tb ? n : k, tb ? k : n, Eigen::OuterStride<>(ldb));
  matrix r(m, n);
  if (k == 0) r.setZero();
  else if (ta && tb) r.noalias() = A.transpose() * B.transpose();
  else if (ta) r.noalias() = A.transpose() * B;
  else if (tb) r.noalias() = A * B.transpose();
  else r.noalias() = A * B;
  r *= alpha;
  if (beta != T(0)) r += beta * view(c, m, n, Eigen::OuterStride<>(ldc));
  statistics().gemms += 1;
  statistics().gemm_flops += std::uint64_t(2 * m * n * k);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) d[j * ldd + i] = finish(r(i, j), i);
}

inline cublasStatus_t check_gemm(cublasOperation_t ta, cublasOperation_t tb, std::int64_t m, std::int64_t n,
                                 std::int64_t k, std::int64_t lda, std::int64_t ldb, std::int64_t ldc) {
  if (ta == CUBLAS_OP_C || tb == CUBLAS_OP_C) return CUBLAS_STATUS_NOT_SUPPORTED;  // not used by the backend
  if (m < 0 || n < 0 || k < 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (lda < std::max<std::int64_t>(1, ta == CUBLAS_OP_N ? m : k)) return CUBLAS_STATUS_INVALID_VALUE;
  if (ldb < std::max<std::int64_t>(1, tb == CUBLAS_OP_N ? k : n)) return CUBLAS_STATUS_INVALID_VALUE;
  if (ldc < std::max<std::int64_t>(1, m)) return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

template <class T>
cublasStatus_t gemm_batched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const T* alpha, const T* a, int lda, long long sa, const T* b, int ldb, long long sb,
                            const T* beta, T* c, int ldc, long long sc, int batches) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (const cublasStatus_t s = check_gemm(ta, tb, m, n, k, lda, ldb, ldc)) return s;
  if (batches < 0) return CUBLAS_STATUS_INVALID_VALUE;
  const bool tra = ta == CUBLAS_OP_T, trb = tb == CUBLAS_OP_T;
  const T al = *alpha, be = *beta;
  for (int i = 0; i < batches; ++i) {
    const T* ai = a + i * sa;
    const T* bi = b + i * sb;
    T* ci = c + i * sc;
    if (!column_major_fits(ai, sizeof(T), tra ? k : m, tra ? m : k, lda) ||
        !column_major_fits(bi, sizeof(T), trb ? n : k, trb ? k : n, ldb) || !column_major_fits(ci, sizeof(T), m, n, ldc))
      return CUBLAS_STATUS_INVALID_VALUE;
  }
  runtime_detail::enqueue(h->stream, [=] {
    for (int i = 0; i < batches; ++i)
      gemm<T>(tra, trb, m, n, k, al, a + i * sa, lda, b + i * sb, ldb, be, c + i * sc, ldc, c + i * sc, ldc,
              [](T v, std::int64_t) { return v; });
  });
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace symflow::cuda::emulation::blas_detail

inline const char* cublasGetStatusName(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}
inline const char* cublasGetStatusString(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid value was used as an argument (emulation: a size, leading "
                                             "dimension, type or device range cuBLAS would refuse)";
    default: return cublasGetStatusName(s);
  }
}
inline cublasStatus_t cublasCreate(cublasHandle_t* h) {
  *h = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasDestroy(cublasHandle_t h) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  h->stream = s;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                  const float* alpha, const float* a, int lda, const float* b, int ldb, const float* beta,
                                  float* c, int ldc) {
  return symflow::cuda::emulation::blas_detail::gemm_batched(h, ta, tb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1);
}
inline cublasStatus_t cublasDgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                  const double* alpha, const double* a, int lda, const double* b, int ldb,
                                  const double* beta, double* c, int ldc) {
  return symflow::cuda::emulation::blas_detail::gemm_batched(h, ta, tb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1);
}
inline cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                                 int k, const void* alpha, const void* a, cudaDataType_t at, int lda,
                                                 long long sa, const void* b, cudaDataType_t bt, int ldb, long long sb,
                                                 const void* beta, void* c, cudaDataType_t ct, int ldc, long long sc,
                                                 int batches, cublasComputeType_t compute, cublasGemmAlgo_t) {
  namespace blas = symflow::cuda::emulation::blas_detail;
  if (!blas::types_agree(compute, at) || at != bt || at != ct) return CUBLAS_STATUS_INVALID_VALUE;
  if (at == CUDA_R_64F)
    return blas::gemm_batched(h, ta, tb, m, n, k, static_cast<const double*>(alpha), static_cast<const double*>(a), lda, sa,
                              static_cast<const double*>(b), ldb, sb, static_cast<const double*>(beta),
                              static_cast<double*>(c), ldc, sc, batches);
  return blas::gemm_batched(h, ta, tb, m, n, k, static_cast<const float*>(alpha), static_cast<const float*>(a), lda, sa,
                            static_cast<const float*>(b), ldb, sb, static_cast<const float*>(beta), static_cast<float*>(c),
                            ldc, sc, batches);
}
inline cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                   const void* alpha, const void* a, cudaDataType_t at, int lda, const void* b,
                                   cudaDataType_t bt, int ldb, const void* beta, void* c, cudaDataType_t ct, int ldc,
                                   cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  return cublasGemmStridedBatchedEx(h, ta, tb, m, n, k, alpha, a, at, lda, 0, b, bt, ldb, 0, beta, c, ct, ldc, 0, 1,
                                    compute, algo);
}

#include "cublaslt_api.hpp"
