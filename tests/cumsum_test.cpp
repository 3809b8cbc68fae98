// cumsum (ops/cumsum.hpp) against long-double running sums: every axis of a 3-D operand with odd
// extents, all four exclusive/reverse combinations, NaN/Inf, integer wrapping, the gradient against
// a reference adjoint, the tangent, and the graph interpreter and run-time differentiation against
// compiled evaluation.
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

constexpr std::size_t A = 3, B = 5, C = 7;
using cube = tensor<float, shape<dyn, dyn, dyn>>;

cube random_cube(unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-4, 4);
  cube t({A, B, C}, 0.f);
  for (auto& v : t) v = d(rng);
  return t;
}

// The reference: y[..k..] = sum of x over the prefix (or suffix) of k along `axis`, in long double.
std::vector<long double> running_sums(const cube& x, std::size_t axis, bool exclusive, bool reverse) {
  const std::size_t ext[3] = {A, B, C};
  std::vector<long double> out(x.size());
  for (std::size_t i = 0; i < A; ++i)
    for (std::size_t j = 0; j < B; ++j)
      for (std::size_t k = 0; k < C; ++k) {
        std::size_t at[3] = {i, j, k};
        const std::size_t here = at[axis];
        long double s = 0;
        for (std::size_t m = 0; m < ext[axis]; ++m) {
          const bool included = reverse ? (exclusive ? m > here : m >= here) : (exclusive ? m < here : m <= here);
          if (!included) continue;
          at[axis] = m;
          s += x.data()[(at[0] * B + at[1]) * C + at[2]];
        }
        out[(i * B + j) * C + k] = s;
      }
  return out;
}

template <int Axis, bool Exclusive, bool Reverse>
void check_values(unsigned seed) {
  SCOPED_TRACE("axis " + std::to_string(Axis) + (Exclusive ? ", exclusive" : "") + (Reverse ? ", reverse" : ""));
  const auto x = placeholder<"x", float, shape<dyn, dyn, dyn>>();
  const cube v = random_cube(seed);
  const auto e = cumsum<Axis, Exclusive, Reverse>(x);
  const auto y = eval(e, x = v);
  const auto want = running_sums(v, std::size_t(Axis < 0 ? Axis + 3 : Axis), Exclusive, Reverse);
  runtime_feeds feeds;
  feeds.insert_or_assign("x", runtime_tensor(v));
  const auto interpreted = interpreter(to_graph(e)).run(feeds)[0];
  for (std::size_t q = 0; q < v.size(); ++q) {
    // Each prefix is its double running sum rounded once: within half an ulp of float, plus the
    // double sum's own rounding.
    EXPECT_NEAR(y.data()[q], double(want[q]), 1e-6 * (1 + std::abs(double(want[q])))) << q;
    EXPECT_EQ(interpreted.data<float>()[q], y.data()[q]) << "interpreter, element " << q;
  }
}

TEST(Cumsum, ValuesAgainstLongDouble) {
  check_values<1, false, false>(1);
  check_values<1, true, false>(2);
  check_values<1, false, true>(3);
  check_values<1, true, true>(4);
  check_values<0, false, false>(5);
  check_values<-1, false, true>(6);
  check_values<-3, true, false>(7);
}

// On graph handles, spelled with values: negative axes and both flags, against the typed form.
TEST(Cumsum, GraphHandles) {
  const auto x = placeholder<"x", float, shape<dyn, dyn, dyn>>();
  const cube v = random_cube(9);
  graph_builder b;
  auto h = b.input("x", dtype::f32, {-1, std::int64_t(B), std::int64_t(C)});
  const graph g = b.build({cumsum(h, -1), cumsum(h, -2, true, true), cumsum(h, 0, false, true)});
  runtime_feeds feeds;
  feeds.insert_or_assign("x", runtime_tensor(v));
  const auto out = run_graph(g, feeds);
  const auto a = eval(cumsum<2>(x), x = v), c = eval(cumsum<1, true, true>(x), x = v),
             d = eval(cumsum<0, false, true>(x), x = v);
  for (std::size_t q = 0; q < v.size(); ++q) {
    EXPECT_EQ(out.at(0).data<float>()[q], a.data()[q]) << q;
    EXPECT_EQ(out.at(1).data<float>()[q], c.data()[q]) << q;
    EXPECT_EQ(out.at(2).data<float>()[q], d.data()[q]) << q;
  }
}

TEST(Cumsum, DocumentedExampleAndSpecials) {
  const auto x = placeholder<"x", double, shape<dyn, dyn>>();
  tensor<double, shape<dyn, dyn>> v({2, 3}, 0.0);
  for (std::size_t i = 0; i < 6; ++i) v.data()[i] = double(i + 1);
  const auto plain = eval(cumsum<1>(x), x = v);
  const auto both = eval(cumsum<1, true, true>(x), x = v);
  const double want_plain[] = {1, 3, 6, 4, 9, 15}, want_both[] = {5, 3, 0, 11, 6, 0};
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(plain.data()[i], want_plain[i]) << i;
    EXPECT_EQ(both.data()[i], want_both[i]) << i;
  }
  const double inf = std::numeric_limits<double>::infinity();
  tensor<double, shape<dyn, dyn>> s({1, 5}, 0.0);
  const double sv[] = {1, inf, 2, -inf, 3};
  std::copy(std::begin(sv), std::end(sv), s.data());
  const auto r = eval(cumsum<-1>(x), x = s);
  EXPECT_EQ(r(0, 0), 1);
  EXPECT_EQ(r(0, 1), inf);
  EXPECT_EQ(r(0, 2), inf);
  EXPECT_TRUE(std::isnan(r(0, 3)));
  EXPECT_TRUE(std::isnan(r(0, 4)));
  // An empty axis gives an empty result; an axis of one element copies it (exclusive: 0).
  tensor<double, shape<dyn, dyn>> empty({3, 0}, 0.0);
  EXPECT_EQ(eval(cumsum<1>(x), x = empty).size(), 0u);
  tensor<double, shape<dyn, dyn>> column({4, 1}, -0.0);
  const auto c = eval(cumsum<1, true>(x), x = column);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(c.data()[i], 0.0);
}

TEST(Cumsum, IntegersWrap) {
  const auto k = placeholder<"k", std::int32_t, shape<dyn>>();
  tensor<std::int32_t, shape<dyn>> v(extents_t<1>{3}, std::numeric_limits<std::int32_t>::max());
  v[1] = 1;
  v[2] = 5;
  const auto y = eval(cumsum<0>(k), k = v);
  EXPECT_EQ(y[0], std::numeric_limits<std::int32_t>::max());
  EXPECT_EQ(y[1], std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ(y[2], std::numeric_limits<std::int32_t>::min() + 5);
  runtime_feeds feeds;
  feeds.insert_or_assign("k", runtime_tensor(v));
  EXPECT_EQ(interpreter(to_graph(cumsum<0>(k))).run(feeds)[0].data<std::int32_t>()[1],
            std::numeric_limits<std::int32_t>::min());
}

// d/dx[j] of sum_k w[k] y[k] is the sum of w over the k whose running sum reads x[j]: the running
// sum of w in the other direction, computed here by the definition.
template <bool Exclusive, bool Reverse>
void check_gradient() {
  SCOPED_TRACE(std::string(Exclusive ? "exclusive" : "inclusive") + (Reverse ? ", reverse" : ""));
  const auto x = placeholder<"x", double, shape<dyn, dyn>>();
  const auto w = placeholder<"w", double, shape<dyn, dyn>>();
  const auto t = placeholder<"t", double, shape<dyn, dyn>>();
  const std::size_t rows = 3, n = 9;
  std::mt19937 rng(Exclusive * 2 + Reverse);
  std::uniform_real_distribution<double> d(-1, 1);
  tensor<double, shape<dyn, dyn>> xv({rows, n}, 0.0), wv({rows, n}, 0.0), tv({rows, n}, 0.0);
  for (auto& e : xv) e = d(rng);
  for (auto& e : wv) e = d(rng);
  for (auto& e : tv) e = d(rng);
  const auto loss = sum(cumsum<1, Exclusive, Reverse>(x) * w);
  const auto g = eval(grad(loss, x), x = xv, w = wv);
  const auto tangent = eval(jvp(cumsum<1, Exclusive, Reverse>(x), x, t), x = xv, t = tv);
  const auto of_tangent = eval(cumsum<1, Exclusive, Reverse>(t), t = tv);
  runtime_feeds feeds;
  feeds.insert_or_assign("x", runtime_tensor(xv));
  feeds.insert_or_assign("w", runtime_tensor(wv));
  const auto differentiated = interpreter(differentiate(to_graph(loss), {"x"})).run(feeds).at(1);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < n; ++j) {
      double want = 0;
      for (std::size_t k = 0; k < n; ++k) {
        const bool reads = Reverse ? (Exclusive ? j > k : j >= k) : (Exclusive ? j < k : j <= k);
        if (reads) want += wv(r, k);
      }
      EXPECT_NEAR(g(r, j), want, 1e-12) << r << ", " << j;
      EXPECT_NEAR(differentiated.data<double>()[r * n + j], want, 1e-12) << "run-time gradient " << r << ", " << j;
      EXPECT_EQ(tangent(r, j), of_tangent(r, j));
    }
}

TEST(Cumsum, GradientRunsTheOtherWay) {
  check_gradient<false, false>();
  check_gradient<true, false>();
  check_gradient<false, true>();
  check_gradient<true, true>();
}

}  // namespace
