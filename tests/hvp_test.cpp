// Second order: hvp (a gradient differentiated again) against float64 central differences of the
// gradient, H v ≈ (∇f(w + h v) − ∇f(w − h v)) / 2h, for a loss with a logsumexp written from ops
// (a max reduction inside). Max and min reductions alone: hvp_reductions_test.
#include "second_order_support.hpp"

using namespace symflow;
using namespace second_order;

TEST(Hvp, LogsumexpWithMaxReduction) {
  auto x = placeholder<"x", double, S>();
  auto w = variable<"w", double, S>();
  auto v = placeholder<"v", double, S>();
  auto z = tanh(x * w) * w;
  auto loss = sum(logsumexp_rows(z));
  expect_matches_differences(hvp(loss, w, v), grad(loss, w), x, w, v);
}
