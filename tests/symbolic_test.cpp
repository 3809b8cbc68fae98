// Simplification visible in types, node counts with and without it, forward mode and
// Hessian-vector products, common-subexpression reuse and one-pass multi-output evaluation.
#include "gradient_support.hpp"

#include <cstdio>

using namespace symflow;
using namespace symflow::testing;

namespace {
auto s = placeholder<"s", float, shape<>>();
auto t = placeholder<"t", float, shape<>>();
auto u = placeholder<"u", float, shape<>>();
using S = decltype(s);
using T = decltype(t);
using U = decltype(u);
using zero_f = zero<float>;
using one_f = one<float>;
template <class E>
using simplified = decltype(simplify(std::declval<const E&>()));
template <class Op, class... A>
using node = elementwise<Op, A...>;
}  // namespace

TEST(Simplify, RulesAreVisibleInTypes) {
  static_assert(std::is_same_v<simplified<decltype(s * zero_f{})>, zero_f>);
  static_assert(std::is_same_v<simplified<decltype(zero_f{} * s)>, zero_f>);
  static_assert(std::is_same_v<simplified<decltype(s * one_f{})>, S>);
  static_assert(std::is_same_v<simplified<decltype(s + zero_f{})>, S>);
  static_assert(std::is_same_v<simplified<decltype(s - s)>, zero_f>);
  static_assert(std::is_same_v<simplified<decltype(-(-s))>, S>);
  static_assert(std::is_same_v<simplified<decltype(s / one_f{})>, S>);
  static_assert(std::is_same_v<simplified<decltype(static_literal<float, 2>{} * static_literal<float, 3>{})>,
                               static_literal<float, 6>>);
  static_assert(std::is_same_v<simplified<decltype(s + s)>, node<ops::mul_op, static_literal<float, 2>, S>>);
  static_assert(std::is_same_v<simplified<decltype(t * s + t * u)>, node<ops::mul_op, T, node<ops::add_op, S, U>>>);
  static_assert(std::is_same_v<simplified<decltype(log(exp(s)))>, S>);
  // exp(log x) is rewritten only where x >= 0 is known: sigmoid is, a plain placeholder is not
  static_assert(std::is_same_v<simplified<decltype(exp(log(sigmoid(s))))>, node<ops::sigmoid_op, S>>);
  static_assert(std::is_same_v<simplified<decltype(exp(log(s)))>, node<ops::exp_op, node<ops::log_op, S>>>);
  // rules apply inside larger expressions, bottom-up
  static_assert(std::is_same_v<simplified<decltype(sin(s * one_f{} + zero_f{}))>, node<ops::sin_op, S>>);
  SUCCEED();
}

TEST(Simplify, KeepsValueAndShape) {
  auto x = placeholder<"x", float, shape<dyn, 3>>();
  const auto xv = random_tensor<float, shape<dyn, 3>>({2, 3}, -1, 1, 1);
  const auto e = x * zero_f{} + sin(x) * one_f{};
  const auto r = eval(simplify(e), x = xv);
  ASSERT_EQ(r.extents(), xv.extents());
  for (std::size_t i = 0; i < r.size(); ++i) EXPECT_FLOAT_EQ(r[i], std::sin(xv[i]));
  // x - x simplifies to a scalar zero, broadcast back to x's shape
  const auto z = eval(simplify(x - x), x = xv);
  ASSERT_EQ(z.extents(), xv.extents());
  for (float v : z) EXPECT_EQ(v, 0.f);
}

TEST(Simplify, ShrinksTheSoftmaxRegressionGradient) {
  auto x = placeholder<"x", float, shape<dyn, 784>>();
  auto y = placeholder<"y", std::int32_t, shape<dyn>>();
  auto W = variable<"W", float, shape<784, 10>>();
  auto b = variable<"b", float, shape<10>>();
  auto loss = -mean(sum(log_softmax(matmul(x, W) + b) * one_hot<10>(y), axes<1>));
  const std::size_t raw_w = node_count(grad_unsimplified(loss, W)), simple_w = node_count(grad(loss, W));
  const std::size_t raw_b = node_count(grad_unsimplified(loss, b)), simple_b = node_count(grad(loss, b));
  std::printf("softmax regression: loss %zu nodes; grad W %zu nodes simplified vs %zu unsimplified; "
              "grad b %zu vs %zu\n",
              node_count(loss), simple_w, raw_w, simple_b, raw_b);
  EXPECT_LT(simple_w, raw_w);
  EXPECT_LT(simple_b, raw_b);
  // and both compute the same numbers
  const auto xv = random_tensor<float, shape<dyn, 784>>({5, 784}, 0, 1, 2);
  const tensor<std::int32_t, shape<dyn>> yv{1, 7, 3, 3, 9};
  const auto Wv = random_tensor<float, shape<784, 10>>({784, 10}, -0.05, 0.05, 3);
  const auto bv = random_tensor<float, shape<10>>({10}, -0.1, 0.1, 4);
  const auto g1 = eval(grad(loss, W), x = xv, y = yv, W = Wv, b = bv);
  const auto g2 = eval(grad_unsimplified(loss, W), x = xv, y = yv, W = Wv, b = bv);
  for (std::size_t i = 0; i < g1.size(); ++i) EXPECT_NEAR(g1[i], g2[i], 1e-6);
}

TEST(ForwardMode, JvpEqualsGradientDotTangent) {
  auto x = placeholder<"x", double, shape<dyn, 3>>();
  auto W = variable<"W", double, shape<3, 2>>();
  auto V = placeholder<"V", double, shape<3, 2>>();
  auto loss = sum(tanh(matmul(x, W)) * sigmoid(matmul(x, W)));
  const auto xv = random_tensor<double, shape<dyn, 3>>({4, 3}, -1, 1, 5);
  const auto Wv = random_tensor<double, shape<3, 2>>({3, 2}, -1, 1, 6);
  const auto Vv = random_tensor<double, shape<3, 2>>({3, 2}, -1, 1, 7);
  const double jv = eval(jvp(loss, W, V), x = xv, W = Wv, V = Vv)[0];
  const auto g = eval(grad(loss, W), x = xv, W = Wv);
  double dot = 0;
  for (std::size_t i = 0; i < g.size(); ++i) dot += g[i] * Vv[i];
  EXPECT_NEAR(jv, dot, 1e-12);
}

TEST(ForwardMode, HessianVectorProductMatchesDifferencesOfGradients) {
  auto x = placeholder<"x", double, shape<dyn, 3>>();
  auto W = variable<"W", double, shape<3, 2>>();
  auto V = placeholder<"V", double, shape<3, 2>>();
  auto loss = sum(tanh(matmul(x, W)));
  const auto xv = random_tensor<double, shape<dyn, 3>>({4, 3}, -1, 1, 8);
  const auto Wv = random_tensor<double, shape<3, 2>>({3, 2}, -1, 1, 9);
  const auto Vv = random_tensor<double, shape<3, 2>>({3, 2}, -1, 1, 10);
  const auto hv = eval(hvp(loss, W, V), x = xv, W = Wv, V = Vv);
  const double h = 1e-6;
  auto Wp = Wv, Wm = Wv;
  for (std::size_t i = 0; i < Wv.size(); ++i) {
    Wp[i] += h * Vv[i];
    Wm[i] -= h * Vv[i];
  }
  const auto gp = eval(grad(loss, W), x = xv, W = Wp), gm = eval(grad(loss, W), x = xv, W = Wm);
  for (std::size_t i = 0; i < hv.size(); ++i) EXPECT_NEAR(hv[i], (gp[i] - gm[i]) / (2 * h), 1e-7);
}

TEST(CommonSubexpressions, SharedMatmulIsComputedOnce) {
  auto x = placeholder<"x", float, shape<dyn, 8>>();
  auto W = variable<"W", float, shape<8, 4>>();
  auto b = variable<"b", float, shape<4>>();
  // The gradient repeats tanh(matmul(x, W) + b) from the forward part, twice.
  auto dW = grad(sum(tanh(matmul(x, W) + b)), W);
  const auto xv = random_tensor<float, shape<dyn, 8>>({16, 8}, -1, 1, 11);
  const auto Wv = random_tensor<float, shape<8, 4>>({8, 4}, -1, 1, 12);
  const auto bv = random_tensor<float, shape<4>>({4}, -1, 1, 13);
  cpu::counters().reset();
  const auto g = eval(dW, x = xv, W = Wv, b = bv);
  // one forward matmul (its repeats read it) + the transposed product x^T g
  EXPECT_EQ(cpu::counters().kernels.load(), 2u);
  EXPECT_GE(cpu::counters().reused.load(), 1u);
  // same numbers as the float64 reference
  for (std::size_t i = 0; i < 8; ++i)
    for (std::size_t j = 0; j < 4; ++j) {
      double ref = 0;
      for (std::size_t r = 0; r < 16; ++r) {
        double z = bv[j];
        for (std::size_t k = 0; k < 8; ++k) z += double(xv(r, k)) * Wv(k, j);
        ref += xv(r, i) * (1 - std::tanh(z) * std::tanh(z));
      }
      EXPECT_NEAR(g(i, j), ref, 1e-4);
    }
}

TEST(CommonSubexpressions, DifferentRuntimeDataIsNotShared) {
  auto x = placeholder<"x", float, shape<dyn, 4>>();
  auto W = variable<"W", float, shape<4, 4>>();
  const auto xv = random_tensor<float, shape<dyn, 4>>({6, 4}, -1, 1, 14);
  const auto Wv = random_tensor<float, shape<4, 4>>({4, 4}, -1, 1, 15);
  // same types, different slice bounds: two different values
  auto e = sum(matmul(slice(x, 0, 3), W)) - sum(matmul(slice(x, 3, 6), W));
  cpu::counters().reset();
  const float v = eval(e, x = xv, W = Wv)[0];
  EXPECT_EQ(cpu::counters().kernels.load(), 2u);
  double ref = 0;
  for (std::size_t r = 0; r < 6; ++r)
    for (std::size_t k = 0; k < 4; ++k)
      for (std::size_t j = 0; j < 4; ++j) ref += (r < 3 ? 1.0 : -1.0) * xv(r, k) * Wv(k, j);
  EXPECT_NEAR(v, ref, 1e-4);
}

TEST(MultiOutput, LossAndGradientsInOnePass) {
  auto x = placeholder<"x", float, shape<dyn>>();
  auto y = placeholder<"y", float, shape<dyn>>();
  auto w = variable<"w", float, shape<dyn>>();
  auto b = variable<"b", float, shape<>>();
  auto loss = sum(log(1 + exp(-y * (w * x + b))));
  auto [dw, db] = grad(loss, w, b);
  const std::size_t n = 100003;
  const auto xv = random_tensor<float, shape<dyn>>({n}, -2, 2, 16);
  const auto wv = random_tensor<float, shape<dyn>>({n}, -0.5, 0.5, 17);
  auto yv = random_tensor<float, shape<dyn>>({n}, -1, 1, 18);
  for (auto& v : yv) v = v > 0 ? 1.f : -1.f;
  const tensor<float, shape<>> bv(0.25f);
  cpu::counters().reset();
  const auto [L, DW, DB] = eval(loss, dw, db, x = xv, y = yv, w = wv, b = bv);
  EXPECT_EQ(cpu::counters().fused_passes.load(), 1u);
  double l = 0, gb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double z = -double(yv[i]) * (double(wv[i]) * xv[i] + 0.25);
    l += std::log1p(std::exp(z));
    const double g = -double(yv[i]) / (1 + std::exp(-z));
    gb += g;
    EXPECT_NEAR(DW[i], g * xv[i], 2e-6);
  }
  EXPECT_NEAR(L[0], l, 1e-5 * l);
  EXPECT_NEAR(DB[0], gb, 1e-4 * std::max(1.0, std::abs(gb)));
}
