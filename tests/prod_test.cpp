// prod (ops/prod.hpp) against long-double references: values over one axis, the other and all
// axes (odd lengths, an empty axis, NaN/Inf/-0), integer wrapping, the gradient and the tangent with
// zeros in a slice (none, one, two), and the graph interpreter against compiled evaluation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <symflow/graph/all.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <symflow/symflow.hpp>

using namespace symflow;

namespace {

tensor<float, shape<dyn, dyn>> random_matrix(std::size_t rows, std::size_t cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> magnitude(0.6f, 1.6f);
  tensor<float, shape<dyn, dyn>> t({rows, cols}, 0.f);
  for (auto& v : t) v = (rng() & 1 ? 1.f : -1.f) * magnitude(rng);
  return t;
}

// Relative difference of a float result from its long double reference, with equal NaNs as 0; a
// reference beyond float's range must have given the infinity of its sign.
double relative(float got, long double want) {
  if (std::isnan(got) && std::isnan((double)want)) return 0;
  if (std::isinf(got) || std::isinf(float(want))) return got == float(want) ? 0 : INFINITY;
  return std::abs((long double)got - want) / std::max<long double>(std::abs(want), 1e-30L);
}

TEST(Prod, ValuesAgainstLongDouble) {
  const auto x = placeholder<"x", float, shape<dyn, dyn>>();
  for (auto [rows, cols] : {std::pair<std::size_t, std::size_t>{5, 37}, {3, 1}, {1, 70001}, {4, 0}, {129, 17}}) {
    SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(cols));
    auto v = random_matrix(rows, cols, unsigned(rows * 31 + cols));
    if (cols > 30000)  // keep a long product in range: magnitudes around 1
      for (auto& e : v) e = e > 0 ? 1.f + (e - 1.f) * 1e-3f : -1.f + (e + 1.f) * 1e-3f;
    const auto by_row = eval(prod(x, axes<1>), x = v);
    const auto by_column = eval(prod(x, axes<-2>, keepdims), x = v);
    const auto all = eval(prod(x), x = v);
    // Each multiplication rounds once: n factors are within n float epsilons (relative).
    const auto bound = [](std::size_t n) { return double(n + 1) * std::numeric_limits<float>::epsilon(); };
    long double total = 1;
    for (std::size_t r = 0; r < rows; ++r) {
      long double p = 1;
      for (std::size_t c = 0; c < cols; ++c) p *= v(r, c);
      total *= p;
      EXPECT_LE(relative(by_row[r], p), bound(cols)) << "row " << r;
    }
    for (std::size_t c = 0; c < cols; ++c) {
      long double p = 1;
      for (std::size_t r = 0; r < rows; ++r) p *= v(r, c);
      EXPECT_LE(relative(by_column(0, c), p), bound(rows)) << "column " << c;
    }
    EXPECT_LE(relative(all[0], total), bound(rows * cols));
    EXPECT_EQ(by_column.extent(0), 1u);
  }
}

TEST(Prod, SpecialValues) {
  const auto x = placeholder<"x", double, shape<dyn, 3>>();
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  tensor<double, shape<dyn, 3>> v({6, 3}, 1.0);
  const double rows[6][3] = {{2, -0.0, 3}, {0, inf, 1}, {nan, 2, 0}, {-inf, 2, -1}, {-2, 3, 0.5}, {-0.0, -0.0, 1}};
  for (std::size_t r = 0; r < 6; ++r)
    for (std::size_t c = 0; c < 3; ++c) v(r, c) = rows[r][c];
  const auto y = eval(prod(x, axes<1>), x = v);
  EXPECT_EQ(y[0], 0.0);
  EXPECT_TRUE(std::signbit(y[0]));  // 2 * -0 * 3 is -0
  EXPECT_TRUE(std::isnan(y[1]));    // 0 * Inf
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_EQ(y[3], inf);
  EXPECT_EQ(y[4], -3.0);
  EXPECT_FALSE(std::signbit(y[5]));  // -0 * -0 is +0
  // The interpreter agrees exactly here (few factors, all exact).
  runtime_feeds feeds;
  feeds.insert_or_assign("x", runtime_tensor(v));
  const auto interpreted = interpreter(to_graph(prod(x, axes<1>))).run(feeds)[0];
  for (std::size_t r = 0; r < 6; ++r) {
    const double got = interpreted.data<double>()[r];
    EXPECT_TRUE((std::isnan(got) && std::isnan(y[r])) || (got == y[r] && std::signbit(got) == std::signbit(y[r])))
        << "row " << r << ": interpreter " << got << ", compiled " << y[r];
  }
}

TEST(Prod, IntegersWrap) {
  const auto k = placeholder<"k", std::int32_t, shape<dyn>>();
  std::mt19937 rng(7);
  for (std::size_t n : {std::size_t(1), std::size_t(9), std::size_t(41), std::size_t(40001)}) {
    tensor<std::int32_t, shape<dyn>> v(extents_t<1>{n}, 1);
    std::uint64_t want = 1;
    for (auto& e : v) {
      e = std::int32_t(rng() % 2001) - 1000;
      if (e == 0) e = 3;
      want *= static_cast<std::uint64_t>(static_cast<std::int64_t>(e));
    }
    EXPECT_EQ(eval(prod(k), k = v)[0], static_cast<std::int32_t>(want)) << n;
    runtime_feeds feeds;
    feeds.insert_or_assign("k", runtime_tensor(v));
    EXPECT_EQ(interpreter(to_graph(prod(k))).run(feeds)[0].data<std::int32_t>()[0], static_cast<std::int32_t>(want)) << n;
  }
}

// d/dx_i of prod over a row is the product of the row's other elements; rows with no zero, one zero
// and two zeros (and the documented example).
TEST(Prod, GradientAndTangentWithZeros) {
  const auto x = placeholder<"x", double, shape<dyn, dyn>>();
  const auto w = placeholder<"w", double, shape<dyn>>();
  const auto t = placeholder<"t", double, shape<dyn, dyn>>();
  const std::size_t rows = 4, cols = 7;
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> d(-2, 2);
  tensor<double, shape<dyn, dyn>> v({rows, cols}, 0.0), tv({rows, cols}, 0.0);
  tensor<double, shape<dyn>> wv(extents_t<1>{rows}, 0.0);
  for (auto& e : v) e = d(rng);
  for (auto& e : tv) e = d(rng);
  for (auto& e : wv) e = d(rng);
  v(1, 3) = 0;             // one zero
  v(2, 0) = v(2, 5) = 0;   // two zeros
  v(3, 6) = -0.0;          // one negative zero
  const auto g = eval(grad(sum(prod(x, axes<1>) * w), x), x = v, w = wv);
  const auto tangent = eval(jvp(prod(x, axes<1>), x, t), x = v, t = tv);
  for (std::size_t r = 0; r < rows; ++r) {
    long double directional = 0;
    for (std::size_t c = 0; c < cols; ++c) {
      long double others = 1;
      for (std::size_t j = 0; j < cols; ++j)
        if (j != c) others *= v(r, j);
      EXPECT_NEAR(g(r, c), double(wv[r] * others), 1e-12) << r << ", " << c;
      directional += tv(r, c) * others;
    }
    EXPECT_NEAR(tangent[r], double(directional), 1e-12) << r;
  }
  // ops/prod.hpp's example: rows [1, 2, 3] and [4, 0, 6].
  tensor<double, shape<dyn, dyn>> e({2, 3}, 0.0);
  const double ev[] = {1, 2, 3, 4, 0, 6};
  std::copy(std::begin(ev), std::end(ev), e.data());
  const auto eg = eval(grad(sum(prod(x, axes<1>)), x), x = e);
  const double want[] = {6, 3, 2, 0, 24, 0};
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(eg.data()[i], want[i]) << i;
}

// The gradient as a graph (differentiated at run time) gives what the typed gradient gives.
TEST(Prod, GraphGradientMatchesTyped) {
  const auto x = placeholder<"x", double, shape<dyn, dyn>>();
  tensor<double, shape<dyn, dyn>> v({3, 5}, 0.0);
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> d(-2, 2);
  for (auto& e : v) e = d(rng);
  v(0, 2) = 0;
  const auto typed = eval(grad(sum(prod(x, axes<1>)), x), x = v);
  runtime_feeds feeds;
  feeds.insert_or_assign("x", runtime_tensor(v));
  // The typed gradient lowered to a graph, and the graph of the loss differentiated at run time.
  const auto lowered = interpreter(to_graph(grad(sum(prod(x, axes<1>)), x))).run(feeds)[0];
  const auto differentiated = interpreter(differentiate(to_graph(sum(prod(x, axes<1>))), {"x"})).run(feeds).at(1);
  for (std::size_t i = 0; i < v.size(); ++i) {
    EXPECT_NEAR(lowered.data<double>()[i], typed.data()[i], 1e-12) << i;
    EXPECT_NEAR(differentiated.data<double>()[i], typed.data()[i], 1e-12) << i;
  }
}

}  // namespace
