#pragma once
// Shared by the scan tests: normal random float64 values and a central difference of one stored value.
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <random>
#include <string>

#include <symflow/symflow.hpp>

namespace scan_testing {

constexpr std::size_t batch = 2, in = 3, H = 4;

template <class S>
symflow::tensor<double, S> random_values(std::array<std::size_t, S::rank> e, unsigned seed, double scale = 1) {
  symflow::tensor<double, S> t(e, symflow::uninitialized);
  std::mt19937 rng(seed);
  std::normal_distribution<double> n(0, scale);
  for (auto& v : t) v = n(rng);
  return t;
}

// (f(x + h) - f(x - h)) / 2h for the value at slot, h = 1e-6; the slot is restored.
template <class F>
double central_difference(double* slot, F&& f) {
  const double saved = *slot, step = 1e-6;
  *slot = saved + step;
  const double up = f();
  *slot = saved - step;
  const double down = f();
  *slot = saved;
  return (up - down) / (2 * step);
}

// Each element of a variable's gradient against the central difference of `value` (a function of
// the stored parameters) in that element of the store.
template <class Gradient, class Var, class F>
void expect_stored_gradient(symflow::params& p, const Gradient& gradient, const Var&, F&& value, const char* what) {
  auto w = p.view<double, typename Var::shape_type>(std::string(Var::name.view()));
  ASSERT_EQ(gradient.size(), w.size());
  for (std::size_t i = 0; i < w.size(); ++i)
    EXPECT_NEAR(gradient.data()[i], central_difference(w.data() + i, value), 1e-7) << what << "[" << i << "]";
}

}  // namespace scan_testing
