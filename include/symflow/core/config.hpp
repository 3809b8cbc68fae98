#pragma once
// Macros shared by host and device code. Kept free of any other include so that the CUDA side can use
// it without pulling in host-only headers.
//
// SYMFLOW_SCALAR_ONLY is defined only by the NVRTC prelude (cuda/include/symflow/cuda/nvrtc/prelude.hpp):
// an elementwise op file (ops/<op>.hpp) then keeps just its struct, `name` and SYMFLOW_HD `apply`, so that
// kernels generated at run time for graph values call the op's own scalar function (docs/cuda.md).
#if defined(__CUDACC__)
#define SYMFLOW_HD __host__ __device__
#else
#define SYMFLOW_HD
#endif

#if defined(__GNUC__) && !defined(SYMFLOW_NO_FORCE_INLINE)
#define SYMFLOW_INLINE inline __attribute__((always_inline))
#define SYMFLOW_INLINE_LAMBDA __attribute__((always_inline))
#else
#define SYMFLOW_INLINE inline
#define SYMFLOW_INLINE_LAMBDA
#endif
