#pragma once
// Non-temporal (streaming) stores, shared by compiled fused loops, the interpreter and the passes
// it generates (runtime/pass_support.hpp).
#include <type_traits>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "../../core/config.hpp"

namespace symflow::cpu::detail {

// Non-temporal (streaming) stores for outputs too large to stay in cache: they skip the read for
// ownership a normal store does, so a map moves (inputs + output) bytes instead of (inputs + 2 x
// output). Overloads exist for the x86 packet types; the return type says whether one exists (the
// template is only declared). Used only at addresses that are a multiple of the packet size.
template <class T, class P>
std::false_type stream_store(T*, const P&);
#if defined(__AVX512F__)
SYMFLOW_INLINE std::true_type stream_store(float* to, const __m512& p) { return _mm512_stream_ps(to, p), std::true_type{}; }
SYMFLOW_INLINE std::true_type stream_store(double* to, const __m512d& p) { return _mm512_stream_pd(to, p), std::true_type{}; }
#endif
#if defined(__AVX__)
SYMFLOW_INLINE std::true_type stream_store(float* to, const __m256& p) { return _mm256_stream_ps(to, p), std::true_type{}; }
SYMFLOW_INLINE std::true_type stream_store(double* to, const __m256d& p) { return _mm256_stream_pd(to, p), std::true_type{}; }
#endif
#if defined(__SSE2__)
SYMFLOW_INLINE std::true_type stream_store(float* to, const __m128& p) { return _mm_stream_ps(to, p), std::true_type{}; }
SYMFLOW_INLINE std::true_type stream_store(double* to, const __m128d& p) { return _mm_stream_pd(to, p), std::true_type{}; }
#endif

// Orders this thread's streaming stores before whatever follows (the join of the parallel region).
SYMFLOW_INLINE void stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}
}  // namespace symflow::cpu::detail
