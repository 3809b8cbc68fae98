// The hand-written W3 reference: loss and both gradients in one OpenMP loop. Its own translation
// unit, compiled with -ffast-math so that GCC vectorizes exp/log1p through libmvec, as a performance
// engineer writing this loop by hand would.
#include "gradient_hand.hpp"

#include <cmath>

namespace w3 {
result handwritten(const float* x, const float* y, const float* w, float b, float* dw, std::size_t n) {
  double loss = 0, db = 0;
#pragma omp parallel for simd reduction(+ : loss, db) schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    const float z = -y[i] * (w[i] * x[i] + b);
    const float e = std::exp(z);
    loss += std::log1p(e);
    const float s = e / (1.0f + e);  // d loss / d z
    const float gz = -s * y[i];      // d loss / d (w x + b)
    dw[i] = gz * x[i];
    db += gz;
  }
  return {float(loss), float(db)};
}
}  // namespace w3
