#pragma once
// Macros shared by host and device code. Kept free of any other include so that the CUDA side can use
// it without pulling in host-only headers.
#if defined(__CUDACC__)
#define SYMFLOW_HD __host__ __device__
#else
#define SYMFLOW_HD
#endif

#if defined(__GNUC__) && !defined(SYMFLOW_NO_FORCE_INLINE)
#define SYMFLOW_INLINE inline __attribute__((always_inline))
#else
#define SYMFLOW_INLINE inline
#endif
