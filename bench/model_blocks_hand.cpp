// bench/model_blocks' hand-written baselines (model_blocks_hand.hpp), built with -ffast-math.
#include "model_blocks_hand.hpp"

#include <cmath>

namespace bench {

void softmax_rows(const float* x, float* y, std::size_t rows, std::size_t cols) {
#pragma omp parallel for schedule(static)
  for (std::size_t r = 0; r < rows; ++r) {
    const float* in = x + r * cols;
    float* out = y + r * cols;
    float top = in[0];
#pragma omp simd reduction(max : top)
    for (std::size_t c = 0; c < cols; ++c) top = std::fmax(top, in[c]);
    float total = 0;
#pragma omp simd reduction(+ : total)
    for (std::size_t c = 0; c < cols; ++c) total += (out[c] = std::exp(in[c] - top));
    const float scale = 1 / total;
#pragma omp simd
    for (std::size_t c = 0; c < cols; ++c) out[c] *= scale;
  }
}

void log_softmax_rows(const float* x, float* y, std::size_t rows, std::size_t cols) {
#pragma omp parallel for schedule(static)
  for (std::size_t r = 0; r < rows; ++r) {
    const float* in = x + r * cols;
    float* out = y + r * cols;
    float top = in[0];
#pragma omp simd reduction(max : top)
    for (std::size_t c = 0; c < cols; ++c) top = std::fmax(top, in[c]);
    float total = 0;
#pragma omp simd reduction(+ : total)
    for (std::size_t c = 0; c < cols; ++c) total += std::exp(in[c] - top);
    const float shift = top + std::log(total);
#pragma omp simd
    for (std::size_t c = 0; c < cols; ++c) out[c] = in[c] - shift;
  }
}

void logsumexp_rows(const float* x, float* y, std::size_t rows, std::size_t cols) {
#pragma omp parallel for schedule(static)
  for (std::size_t r = 0; r < rows; ++r) {
    const float* in = x + r * cols;
    float top = in[0];
#pragma omp simd reduction(max : top)
    for (std::size_t c = 0; c < cols; ++c) top = std::fmax(top, in[c]);
    float total = 0;
#pragma omp simd reduction(+ : total)
    for (std::size_t c = 0; c < cols; ++c) total += std::exp(in[c] - top);
    y[r] = top + std::log(total);
  }
}

void layer_norm_rows(const float* x, const float* gamma, const float* beta, float* y, std::size_t rows,
                     std::size_t cols, float epsilon) {
#pragma omp parallel for schedule(static)
  for (std::size_t r = 0; r < rows; ++r) {
    const float* in = x + r * cols;
    float* out = y + r * cols;
    float total = 0;
#pragma omp simd reduction(+ : total)
    for (std::size_t c = 0; c < cols; ++c) total += in[c];
    const float mean = total / float(cols);
    float squares = 0;
#pragma omp simd reduction(+ : squares)
    for (std::size_t c = 0; c < cols; ++c) squares += (in[c] - mean) * (in[c] - mean);
    const float inverse = 1 / std::sqrt(squares / float(cols) + epsilon);
#pragma omp simd
    for (std::size_t c = 0; c < cols; ++c) out[c] = (in[c] - mean) * inverse * gamma[c] + beta[c];
  }
}

void adam(float* w, float* m, float* v, const float* g, std::size_t n, float b1, float b2, float step_size, float c2,
          float epsilon) {
#pragma omp parallel for simd schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    const float mi = b1 * m[i] + (1 - b1) * g[i];
    const float vi = b2 * v[i] + (1 - b2) * g[i] * g[i];
    m[i] = mi;
    v[i] = vi;
    w[i] -= step_size * mi / (std::sqrt(vi) * c2 + epsilon);
  }
}

void read4_write3(float* w, float* m, float* v, const float* g, std::size_t n) {
#pragma omp parallel for simd schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    const float d = g[i];
    m[i] += d;
    v[i] += d;
    w[i] += d;
  }
}

#define BENCH_UNARY(name, expression)                       \
  void name(const float* x, float* y, std::size_t n) {      \
    _Pragma("omp parallel for simd schedule(static)")       \
    for (std::size_t i = 0; i < n; ++i) y[i] = expression;  \
  }
BENCH_UNARY(exp, std::exp(x[i]))
BENCH_UNARY(tanh, std::tanh(x[i]))
BENCH_UNARY(log, std::log(x[i]))
BENCH_UNARY(erf, std::erf(x[i]))
BENCH_UNARY(sigmoid, 1 / (1 + std::exp(-x[i])))
#undef BENCH_UNARY

}  // namespace bench
