#pragma once
#include <cstddef>

// Plain OpenMP loops (compiled with -ffast-math in their own translation unit).
namespace bench {
void hand_w1(const float* a, const float* b, const float* c, const float* d, float* out, std::size_t n);
void hand_w2(const float* a, const float* b, const float* c, const float* d, float* out, std::size_t n);
// Memory floors: out = in (1 read, 1 write) and out = a + b + c + d (the W1/W2 access pattern), the
// latter with ordinary stores (which first read each output line) and with streaming stores (which
// do not: the least traffic a W1/W2 pass can have).
void copy(const float* in, float* out, std::size_t n);
void read4_write1(const float* a, const float* b, const float* c, const float* d, float* out, std::size_t n);
void read4_write1_streaming(const float* a, const float* b, const float* c, const float* d, float* out,
                            std::size_t n);
}  // namespace bench
