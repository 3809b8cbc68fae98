// Shared by the second-order tests: float64 values and a check of a Hessian-vector product against
// central differences of the gradient along v.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <symflow/symflow.hpp>

namespace second_order {

using namespace symflow;

using S = shape<3, 5>;

inline tensor<double, S> random_values(unsigned seed) {
  tensor<double, S> t({3, 5}, 0.0);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (auto& v : t) v = dist(rng);
  return t;
}

// log(sum(exp(z))) along axis 1, shifted by the row maximum as users write it.
template <class Z>
auto logsumexp_rows(const Z& z) {
  auto m = max(z, axes<1>, keepdims);
  return log(sum(exp(z - m), axes<1>, keepdims)) + m;
}

// Compares hv (evaluated) with central differences of the gradient g along v.
template <class Hv, class G, class X, class W, class V>
void expect_matches_differences(const Hv& hv, const G& g, const X& x, const W& w, const V& v) {
  const auto xv = random_values(1), wv = random_values(2), vv = random_values(3);
  const auto symbolic = eval(hv, x = xv, w = wv, v = vv);
  const double h = 1e-5;
  auto up = wv, down = wv;
  for (std::size_t i = 0; i < wv.size(); ++i) {
    up.data()[i] += h * vv.data()[i];
    down.data()[i] -= h * vv.data()[i];
  }
  const auto gu = eval(g, x = xv, w = up), gd = eval(g, x = xv, w = down);
  for (std::size_t i = 0; i < wv.size(); ++i) {
    const double numeric = (gu.data()[i] - gd.data()[i]) / (2 * h);
    const double scale = std::max({1.0, std::abs(numeric), std::abs(symbolic.data()[i])});
    EXPECT_LT(std::abs(symbolic.data()[i] - numeric) / scale, 1e-6)
        << "element " << i << ": hvp " << symbolic.data()[i] << ", differences " << numeric;
  }
}

}  // namespace second_order
