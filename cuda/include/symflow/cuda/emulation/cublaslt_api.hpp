#pragma once
// cuBLASLt's matmul with the epilogues the backend asks for (none, bias, ReLU, ReLU + bias),
// answered on the host for the emulation build (cublas_api.hpp includes it; cuda/emulation/include/
// cublasLt.h forwards to it). Descriptors and layouts hold what the caller set; the heuristic
// offers one algorithm needing no workspace, and refuses an epilogue it does not know, as cuBLASLt
// refuses one a data type lacks (the backend then falls back to GEMM and a map kernel). The bias is
// a vector over D's rows, added to every column before the ReLU.
#include <cstring>

struct cublasLtContext {};
using cublasLtHandle_t = cublasLtContext*;

enum cublasLtEpilogue_t { CUBLASLT_EPILOGUE_DEFAULT = 1, CUBLASLT_EPILOGUE_RELU = 2, CUBLASLT_EPILOGUE_BIAS = 4,
                          CUBLASLT_EPILOGUE_RELU_BIAS = 6 };
enum cublasLtMatmulDescAttributes_t { CUBLASLT_MATMUL_DESC_TRANSA = 3, CUBLASLT_MATMUL_DESC_TRANSB = 4,
                                      CUBLASLT_MATMUL_DESC_EPILOGUE = 7, CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8 };
enum cublasLtMatmulPreferenceAttributes_t {
  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8,
};

struct cublasLtMatmulDescOpaque_t {
  cublasComputeType_t compute;
  cudaDataType_t scale;
  cublasOperation_t trans_a = CUBLAS_OP_N, trans_b = CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
};
struct cublasLtMatrixLayoutOpaque_t {
  cudaDataType_t type;
  std::uint64_t rows, cols;
  std::int64_t ld;
};
struct cublasLtMatmulPreferenceOpaque_t {
  std::uint64_t max_workspace = 0;
};
struct cublasLtMatmulAlgo_t {
  std::uint64_t data[8] = {};
};
struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  std::size_t workspaceSize = 0;
  cublasStatus_t state = CUBLAS_STATUS_SUCCESS;
  float wavesCount = 1;
  int reserved[4] = {};
};
using cublasLtMatmulDesc_t = cublasLtMatmulDescOpaque_t*;
using cublasLtMatrixLayout_t = cublasLtMatrixLayoutOpaque_t*;
using cublasLtMatmulPreference_t = cublasLtMatmulPreferenceOpaque_t*;

inline cublasStatus_t cublasLtCreate(cublasLtHandle_t* h) {
  *h = new cublasLtContext;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) {
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* d, cublasComputeType_t compute, cudaDataType_t scale) {
  *d = new cublasLtMatmulDescOpaque_t{compute, scale};
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
  delete d;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a,
                                                     const void* value, std::size_t size) {
  const auto read = [&](auto& field) {
    if (size != sizeof(field)) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(&field, value, size);
    return CUBLAS_STATUS_SUCCESS;
  };
  switch (a) {
    case CUBLASLT_MATMUL_DESC_TRANSA: return read(d->trans_a);
    case CUBLASLT_MATMUL_DESC_TRANSB: return read(d->trans_b);
    case CUBLASLT_MATMUL_DESC_EPILOGUE: return read(d->epilogue);
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: return read(d->bias);
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}
inline cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* l, cudaDataType_t type, std::uint64_t rows,
                                                 std::uint64_t cols, std::int64_t ld) {
  if (ld < std::int64_t(std::max<std::uint64_t>(1, rows))) return CUBLAS_STATUS_INVALID_VALUE;
  *l = new cublasLtMatrixLayoutOpaque_t{type, rows, cols, ld};
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
  delete l;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* p) {
  *p = new cublasLtMatmulPreferenceOpaque_t;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
  delete p;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                           cublasLtMatmulPreferenceAttributes_t a, const void* value,
                                                           std::size_t size) {
  if (a == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES) {
    if (size != sizeof(std::uint64_t)) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(&p->max_workspace, value, size);
  }
  return CUBLAS_STATUS_SUCCESS;
}

namespace symflow::cuda::emulation::blas_detail {
// Whether the descriptor and layouts describe D (m x n) = op(A) (m x k) op(B) (k x n) of one type.
inline bool lt_shapes_agree(cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                            cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t out) {
  const std::uint64_t m = out->rows, n = out->cols;
  const std::uint64_t am = d->trans_a == CUBLAS_OP_N ? a->rows : a->cols, ak = d->trans_a == CUBLAS_OP_N ? a->cols : a->rows;
  const std::uint64_t bk = d->trans_b == CUBLAS_OP_N ? b->rows : b->cols, bn = d->trans_b == CUBLAS_OP_N ? b->cols : b->rows;
  return am == m && bn == n && ak == bk && c->rows == m && c->cols == n && a->type == b->type && a->type == out->type &&
         c->type == out->type && types_agree(d->compute, out->type);
}
inline bool lt_epilogue_known(cublasLtMatmulDesc_t d) {
  switch (d->epilogue) {
    case CUBLASLT_EPILOGUE_DEFAULT:
    case CUBLASLT_EPILOGUE_RELU: return true;
    case CUBLASLT_EPILOGUE_BIAS:
    case CUBLASLT_EPILOGUE_RELU_BIAS: return d->bias != nullptr;
  }
  return false;
}
}  // namespace symflow::cuda::emulation::blas_detail

inline cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t a,
                                                     cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                                                     cublasLtMatrixLayout_t out, cublasLtMatmulPreference_t, int requested,
                                                     cublasLtMatmulHeuristicResult_t* results, int* returned) {
  namespace blas = symflow::cuda::emulation::blas_detail;
  *returned = 0;
  if (!h || !d || !a || !b || !c || !out || requested < 1) return CUBLAS_STATUS_INVALID_VALUE;
  if (!blas::lt_shapes_agree(d, a, b, c, out)) return CUBLAS_STATUS_INVALID_VALUE;
  if (!blas::lt_epilogue_known(d)) return CUBLAS_STATUS_NOT_SUPPORTED;
  results[0] = cublasLtMatmulHeuristicResult_t{};
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

inline cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void* alpha, const void* a,
                                     cublasLtMatrixLayout_t al, const void* b, cublasLtMatrixLayout_t bl, const void* beta,
                                     const void* c, cublasLtMatrixLayout_t cl, void* out, cublasLtMatrixLayout_t ol,
                                     const cublasLtMatmulAlgo_t*, void*, std::size_t, cudaStream_t stream) {
  namespace blas = symflow::cuda::emulation::blas_detail;
  if (!h || !d || !al || !bl || !cl || !ol) return CUBLAS_STATUS_INVALID_VALUE;
  if (!blas::lt_shapes_agree(d, al, bl, cl, ol)) return CUBLAS_STATUS_INVALID_VALUE;
  if (!blas::lt_epilogue_known(d)) return CUBLAS_STATUS_NOT_SUPPORTED;
  const std::size_t element = ol->type == CUDA_R_64F ? 8 : 4;
  const std::int64_t m = std::int64_t(ol->rows), n = std::int64_t(ol->cols);
  const std::int64_t k = std::int64_t(d->trans_a == CUBLAS_OP_N ? al->cols : al->rows);
  if (!blas::column_major_fits(a, element, std::int64_t(al->rows), std::int64_t(al->cols), al->ld) ||
      !blas::column_major_fits(b, element, std::int64_t(bl->rows), std::int64_t(bl->cols), bl->ld) ||
      !blas::column_major_fits(out, element, m, n, ol->ld) ||
      (d->bias && !symflow::cuda::emulation::device_memory::instance().holds(d->bias, std::size_t(m) * element)))
    return CUBLAS_STATUS_INVALID_VALUE;
  const bool relu = d->epilogue == CUBLASLT_EPILOGUE_RELU || d->epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
  const bool add_bias = d->epilogue == CUBLASLT_EPILOGUE_BIAS || d->epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
  const bool ta = d->trans_a == CUBLAS_OP_T, tb = d->trans_b == CUBLAS_OP_T;
  const std::int64_t lda = al->ld, ldb = bl->ld, ldc = cl->ld, ldd = ol->ld;
  const void* bias = d->bias;
  // alpha and beta are host values, read now (CUBLAS_POINTER_MODE_HOST); the rest runs on the stream.
  const auto enqueue = [&](auto zero) {
    using T = decltype(zero);
    const T al = *static_cast<const T*>(alpha), be = *static_cast<const T*>(beta);
    const T* bias_t = static_cast<const T*>(bias);
    symflow::cuda::emulation::runtime_detail::enqueue(stream, [=] {
      blas::gemm<T>(ta, tb, m, n, k, al, static_cast<const T*>(a), lda, static_cast<const T*>(b), ldb, be,
                    static_cast<const T*>(c), ldc, static_cast<T*>(out), ldd, [=](T v, std::int64_t row) {
                      if (add_bias) v += bias_t[row];
                      return relu ? (v > T(0) ? v : T(0)) : v;
                    });
    });
  };
  if (ol->type == CUDA_R_64F) enqueue(double(0));
  else enqueue(float(0));
  return CUBLAS_STATUS_SUCCESS;
}
