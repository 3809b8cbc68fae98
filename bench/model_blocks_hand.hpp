#pragma once
#include <cstddef>

// The hand-written loops bench/model_blocks compares symflow with: one OpenMP loop each, rows split
// across threads, -ffast-math in their own translation unit (so GCC calls glibc's vector expf, logf,
// tanhf and erff). Row-major [rows, cols] operands.
namespace bench {
void softmax_rows(const float* x, float* y, std::size_t rows, std::size_t cols);
void log_softmax_rows(const float* x, float* y, std::size_t rows, std::size_t cols);
void logsumexp_rows(const float* x, float* y, std::size_t rows, std::size_t cols);
void layer_norm_rows(const float* x, const float* gamma, const float* beta, float* y, std::size_t rows,
                     std::size_t cols, float epsilon);
// m <- b1 m + (1 - b1) g; v <- b2 v + (1 - b2) g^2; w <- w - step_size m / (sqrt(v) c2 + eps)
void adam(float* w, float* m, float* v, const float* g, std::size_t n, float b1, float b2, float step_size, float c2,
          float epsilon);
// The floor of an in-place update: w, m, v and g read, w, m and v written, no arithmetic to speak of.
void read4_write3(float* w, float* m, float* v, const float* g, std::size_t n);
void exp(const float* x, float* y, std::size_t n);
void tanh(const float* x, float* y, std::size_t n);
void log(const float* x, float* y, std::size_t n);
void erf(const float* x, float* y, std::size_t n);
void sigmoid(const float* x, float* y, std::size_t n);
}  // namespace bench
