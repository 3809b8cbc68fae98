#pragma once
#include <cstddef>

namespace w3 {
struct result {
  float loss, db;
};
result handwritten(const float* x, const float* y, const float* w, float b, float* dw, std::size_t n);
}  // namespace w3
