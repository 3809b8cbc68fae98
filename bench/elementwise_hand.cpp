// Hand-written reference loops for bench/elementwise.cpp. This translation unit alone is compiled
// with -ffast-math (see bench/CMakeLists.txt), which lets GCC call glibc's vector math (libmvec) for
// std::sin / std::tanh / std::exp inside `omp simd` loops: the reference hand loop.
// The memory-floor loops (copy, read-4-write-1) live here too; they contain no math.
#include <cmath>
#include <cstddef>
#include <cstdint>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "elementwise_hand.hpp"

namespace bench {

void hand_w1(const float* __restrict a, const float* __restrict b, const float* __restrict c,
             const float* __restrict d, float* __restrict out, std::size_t n) {
#pragma omp parallel for simd schedule(static)
  for (std::size_t i = 0; i < n; ++i) out[i] = a[i] * b[i] + c[i] * std::sin(d[i]);
}

void hand_w2(const float* __restrict a, const float* __restrict b, const float* __restrict c,
             const float* __restrict d, float* __restrict out, std::size_t n) {
#pragma omp parallel for simd schedule(static)
  for (std::size_t i = 0; i < n; ++i)
    out[i] = std::tanh(a[i] * b[i] + c[i]) * std::exp(-d[i] * d[i]) + 0.5f * a[i];
}

void copy(const float* __restrict in, float* __restrict out, std::size_t n) {
#pragma omp parallel for simd schedule(static)
  for (std::size_t i = 0; i < n; ++i) out[i] = in[i];
}

void read4_write1(const float* __restrict a, const float* __restrict b, const float* __restrict c,
                  const float* __restrict d, float* __restrict out, std::size_t n) {
#pragma omp parallel for simd schedule(static)
  for (std::size_t i = 0; i < n; ++i) out[i] = (a[i] + b[i]) + (c[i] + d[i]);
}

void read4_write1_streaming(const float* __restrict a, const float* __restrict b, const float* __restrict c,
                            const float* __restrict d, float* __restrict out, std::size_t n) {
#if defined(__AVX512F__)
  if (reinterpret_cast<std::uintptr_t>(out) % 64 == 0 && n % 16 == 0) {
    const std::ptrdiff_t packets = std::ptrdiff_t(n / 16);
#pragma omp parallel
    {
#pragma omp for schedule(static)
      for (std::ptrdiff_t p = 0; p < packets; ++p) {
        const std::size_t i = std::size_t(p) * 16;
        const __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)),
                                       _mm512_add_ps(_mm512_loadu_ps(c + i), _mm512_loadu_ps(d + i)));
        _mm512_stream_ps(out + i, s);
      }
      _mm_sfence();
    }
    return;
  }
#endif
  read4_write1(a, b, c, d, out, n);
}

}  // namespace bench
