// Second order through max and min reductions: hvp against float64 central differences of the
// gradient. Both are piecewise linear; at distinct values (no ties, as here) the Hessian is that of
// the selected elements.
#include "second_order_support.hpp"

using namespace symflow;
using namespace second_order;

TEST(Hvp, LossWithMaxAndMinReductions) {
  auto x = placeholder<"x", double, S>();
  auto w = variable<"w", double, S>();
  auto v = placeholder<"v", double, S>();
  auto z = tanh(x * w) * w;
  auto loss = sum(square(max(z, axes<1>))) + sum(min(z, axes<0>));
  expect_matches_differences(hvp(loss, w, v), grad(loss, w), x, w, v);
}
