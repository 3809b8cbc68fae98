#pragma once
// Attention written out in float64 loops, the reference of attention_test and nn_attention_test.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace symflow::testing {

// softmax(q k^T / sqrt(d), masked) v for one batch entry, in float64; q [tq, d], k [tk, d],
// v [tk, dv], all row-major.
inline std::vector<double> reference_attention(const double* q, const double* k, const double* v, std::size_t tq,
                                        std::size_t tk, std::size_t d, std::size_t dv, bool causal) {
  std::vector<double> out(tq * dv, 0.0);
  for (std::size_t i = 0; i < tq; ++i) {
    std::vector<double> s(tk);
    double top = -std::numeric_limits<double>::infinity();
    const std::size_t seen = causal ? std::min(tk, i + 1) : tk;
    for (std::size_t j = 0; j < seen; ++j) {
      double dot = 0;
      for (std::size_t c = 0; c < d; ++c) dot += q[i * d + c] * k[j * d + c];
      s[j] = dot / std::sqrt(double(d));
      top = std::max(top, s[j]);
    }
    double total = 0;
    for (std::size_t j = 0; j < seen; ++j) total += (s[j] = std::exp(s[j] - top));
    for (std::size_t j = 0; j < seen; ++j)
      for (std::size_t c = 0; c < dv; ++c) out[i * dv + c] += s[j] / total * v[j * dv + c];
  }
  return out;
}

template <class T>
std::vector<double> as_doubles(const T& t) {
  return std::vector<double>(t.data(), t.data() + t.size());
}

}  // namespace symflow::testing
