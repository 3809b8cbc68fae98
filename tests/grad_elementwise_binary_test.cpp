// Derivative rules of binary elementwise ops with broadcasting, pow on both operands, where, casts,
// a leaf the loss does not read, and a second derivative, checked against float64 central
// differences on random inputs. (Each op alone, every dtype: the op laws, tests/ops/op_laws.hpp.)
#include "grad_elementwise_support.hpp"

TEST(GradElementwise, BinaryOpsWithBroadcasting) {
  auto a = placeholder<"a", float, S>();
  auto b = placeholder<"b", float, shape<4>>();
  auto k = placeholder<"k", float, shape<3, 1>>();
  const auto av = away_from_zero<float, S>({3, 4}, 0.3, 2, 21);
  const auto bv = away_from_zero<float, shape<4>>({4}, 0.3, 2, 22);
  const auto kv = away_from_zero<float, shape<3, 1>>({3, 1}, 0.3, 2, 23);
  auto check_both = [&](auto loss) {
    expect_gradient_matches(check_gradient(loss, a, a = av, b = bv, k = kv, c = cv));
    expect_gradient_matches(check_gradient(loss, b, a = av, b = bv, k = kv, c = cv));
  };
  check_both(sum((a + b) * c));
  check_both(sum((a - b) * c));
  check_both(sum(a * b * c));
  check_both(sum(a / b * c));
  check_both(sum(maximum(a, b) * c));
  check_both(sum(minimum(a, b) * c));
  // a scalar-shaped and a column operand: gradients are summed back over the broadcast axes
  expect_gradient_matches(check_gradient(sum(a * k * c), k, a = av, b = bv, k = kv, c = cv));
}

TEST(GradElementwise, PowOnBothOperands) {
  auto a = placeholder<"a", float, S>();
  auto p = placeholder<"p", float, S>();
  const auto av = random_tensor<float, S>({3, 4}, 0.5, 2, 31);
  const auto pv = random_tensor<float, S>({3, 4}, -1.5, 2.5, 32);
  expect_gradient_matches(check_gradient(sum(pow(a, p) * c), a, a = av, p = pv, c = cv));
  expect_gradient_matches(check_gradient(sum(pow(a, p) * c), p, a = av, p = pv, c = cv));
}

TEST(GradElementwise, WhereRoutesThroughTheChosenBranch) {
  auto a = placeholder<"a", float, S>();
  auto b = placeholder<"b", float, S>();
  const auto av = away_from_zero<float, S>({3, 4}, 0.2, 2, 41);
  const auto bv = away_from_zero<float, S>({3, 4}, 0.2, 2, 42);
  auto loss = sum(where(a > b, a * a, sin(b)) * c);
  expect_gradient_matches(check_gradient(loss, a, a = av, b = bv, c = cv));
  expect_gradient_matches(check_gradient(loss, b, a = av, b = bv, c = cv));
  // where a <= b the gradient with respect to a is exactly zero
  const auto g = eval(grad(loss, a), a = av, b = bv, c = cv);
  for (std::size_t i = 0; i < g.size(); ++i)
    if (!(av[i] > bv[i])) EXPECT_EQ(g[i], 0.0f);
}

TEST(GradElementwise, CastBetweenFloatTypes) {
  auto xd = placeholder<"xd", double, S>();
  const auto xv = random_tensor<double, S>({3, 4}, -1, 1, 51);
  const auto g = eval(grad(sum(cast<float>(xd) * c), xd), xd = xv, c = cv);
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_DOUBLE_EQ(g[i], double(cv[i]));
}

TEST(GradElementwise, LeafThatDoesNotAppearHasZeroGradient) {
  auto unused = placeholder<"u", float, shape<2, 5>>();
  const auto uv = random_tensor<float, shape<2, 5>>({2, 5}, -1, 1, 61);
  const auto xv = random_tensor<float, S>({3, 4}, -1, 1, 62);
  const auto g = eval(grad(sum(x * c), unused), x = xv, c = cv, unused = uv);
  ASSERT_EQ(g.size(), 10u);
  for (float v : g) EXPECT_EQ(v, 0.0f);
}

TEST(GradElementwise, SecondDerivativeOfXSinX) {
  auto s = placeholder<"s", double, shape<>>();
  const auto f = s * sin(s);
  for (double v : {-1.3, 0.2, 0.7, 2.9}) {
    const tensor<double, shape<>> sv(v);
    EXPECT_NEAR(eval(grad(f, s), s = sv)[0], std::sin(v) + v * std::cos(v), 1e-14);
    EXPECT_NEAR(eval(grad(grad(f, s), s), s = sv)[0], 2 * std::cos(v) - v * std::sin(v), 1e-14);
    EXPECT_NEAR(eval(d(d(f, s), s), s = sv)[0], 2 * std::cos(v) - v * std::sin(v), 1e-14);
  }
}

TEST(GradElementwise, ScalarArithmetic) {
  check_unary([](auto v) { return 2.5f * v - v / 4.0f + 1.0f; }, 0.1, 2);
  check_unary([](auto v) { return 3.0f / v; }, 0.5, 2);
}
