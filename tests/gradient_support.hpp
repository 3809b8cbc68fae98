#pragma once
// Shared by the gradient tests: random inputs and a gradient-check assertion.
#include <gtest/gtest.h>

#include <random>
#include <symflow/symflow.hpp>

namespace symflow::testing {

// Uniform values in [lo, hi], fixed seed per call site so failures reproduce.
template <class T, class S>
tensor<T, S> random_tensor(const extents_t<S::rank>& extents, double lo, double hi, unsigned seed) {
  tensor<T, S> t(extents, uninitialized);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (auto& v : t) v = T(dist(rng));
  return t;
}

// Values whose magnitude lies in [lo, hi] with a random sign: keeps inputs away from the kinks of
// relu, abs, maximum and from zero denominators.
template <class T, class S>
tensor<T, S> away_from_zero(const extents_t<S::rank>& extents, double lo, double hi, unsigned seed) {
  auto t = random_tensor<T, S>(extents, lo, hi, seed);
  std::mt19937 rng(seed + 1);
  for (auto& v : t)
    if (rng() & 1) v = -v;
  return t;
}

// Central differences in float64 agree with the symbolic gradient to ~1e-7 in relative terms
// (the truncation error of a 1e-6 step on smooth functions is far below that).
inline void expect_gradient_matches(const gradient_check& r, double tolerance = 1e-6) {
  EXPECT_LT(r.max_relative_error, tolerance)
      << "worst element " << r.worst_element << ": symbolic " << r.symbolic_at_worst << ", numeric "
      << r.numeric_at_worst;
  EXPECT_FALSE(r.symbolic.empty());
}

}  // namespace symflow::testing
