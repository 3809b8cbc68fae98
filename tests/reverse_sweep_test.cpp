// grad_sweep: one reverse sweep over a model's node objects. Checked against float64 central
// differences and against grad, on models whose subexpressions are shared.
#include "reverse_sweep_support.hpp"

TEST(ReverseSweep, SharedChainMatchesFiniteDifferencesAndGrad) {
  auto x = placeholder<"x", double, shape<7>>();
  auto w = variable<"w", double, shape<7>>();
  auto loss = sum(chain<3>(x * w) * 0.5);
  auto xv = random_values<shape<7>>({7}, 1);
  auto wv = random_values<shape<7>>({7}, 2);
  wv[3] = -0.0;
  const auto swept = eval(grad_sweep(loss, w), x = xv, w = wv);
  const auto tree = eval(grad_by_paths(loss, w), x = xv, w = wv);
  for (std::size_t i = 0; i < 7; ++i) EXPECT_NEAR(swept[i], tree[i], 1e-12 * std::max(1.0, std::abs(tree[i])));
  expect_close(swept, finite_differences(loss, wv, [&](const auto& e) { return eval(e, x = xv, w = wv); }));
}

TEST(ReverseSweep, NodesOfOneTypeWithDifferentValuesGetTheirOwnAdjoints) {
  // a and b have one type (a literal times u) but are different nodes.
  auto x = placeholder<"x", double, shape<5>>();
  auto w = variable<"w", double, shape<5>>();
  auto u = x * w;
  auto a = 0.5 * u;
  auto b = 0.7 * u;
  static_assert(std::is_same_v<decltype(a), decltype(b)>);
  auto loss = sum(a * b + a * a - b);
  auto xv = random_values<shape<5>>({5}, 3);
  auto wv = random_values<shape<5>>({5}, 4);
  const auto g = eval(grad_sweep(loss, w), x = xv, w = wv);
  for (std::size_t i = 0; i < 5; ++i) {
    const double uu = xv[i] * wv[i];
    const double expected = (2 * 0.35 * uu + 2 * 0.25 * uu - 0.7) * xv[i];
    EXPECT_NEAR(g[i], expected, 1e-12);
  }
}

TEST(ReverseSweep, LeavesTheLossDoesNotReadGetZeros) {
  auto x = placeholder<"x", double, shape<3>>();
  auto w = variable<"w", double, shape<3>>();
  auto unused = variable<"unused", double, shape<2, 3>>();
  auto [gw, gu] = grad_sweep(sum(x * w), w, unused);
  tensor<double, shape<3>> xv({3}, 2.0), wv({3}, 1.0);
  tensor<double, shape<2, 3>> uv({2, 3}, 1.0);
  const auto [a, z] = eval(gw, gu, x = xv, w = wv, unused = uv);
  for (double v : a) EXPECT_EQ(v, 2.0);
  for (double v : z) EXPECT_EQ(v, 0.0);
}

TEST(ReverseSweep, NonFiniteValuesPropagateAsIn754) {
  auto x = placeholder<"x", double, shape<3>>();
  auto w = variable<"w", double, shape<3>>();
  auto u = x * w;
  auto g = grad_sweep(sum(u * u), w);
  tensor<double, shape<3>> xv({3}, 1.0), wv({3}, 1.0);
  xv[1] = std::numeric_limits<double>::quiet_NaN();
  xv[2] = std::numeric_limits<double>::infinity();
  const auto r = eval(g, x = xv, w = wv);
  EXPECT_EQ(r[0], 2.0);
  EXPECT_TRUE(std::isnan(r[1]));
  EXPECT_TRUE(std::isinf(r[2]));
}
