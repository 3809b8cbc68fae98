#pragma once
// Shared by the elementwise derivative-rule tests (grad_elementwise*_test.cpp): the unary check.
#include "gradient_support.hpp"

using namespace symflow;
using namespace symflow::testing;

namespace {
using S = shape<3, 4>;
auto x = placeholder<"x", float, S>();
auto c = placeholder<"c", float, S>();
const auto cv = random_tensor<float, S>({3, 4}, -1, 1, 7);

template <class F>
void check_unary(F f, double lo, double hi, bool symmetric = true) {
  const auto xv = symmetric ? away_from_zero<float, S>({3, 4}, lo, hi, 11) : random_tensor<float, S>({3, 4}, lo, hi, 11);
  expect_gradient_matches(check_gradient(sum(f(x) * c), x, x = xv, c = cv));
}
}  // namespace
