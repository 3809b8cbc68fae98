// pad (ops/pad.hpp) against an independent reference (the numpy.pad rules written out per mode):
// constant, reflect and edge on 1-, 2- and 3-D operands with odd extents, NaN/-0 kept bit for bit,
// a nonzero constant and a scalar-expression constant, gradients against the reference's transpose,
// graph handles, the interpreter and run-time differentiation, and refused pads.
#include <gtest/gtest.h>

#include <bit>
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

// numpy.pad's source index along one axis, or -1 for a constant border.
long source(long o, long begin, long n, pad_mode mode) {
  const long s = o - begin;
  if (s >= 0 && s < n) return s;
  switch (mode) {
    case pad_mode::constant: return -1;
    case pad_mode::reflect: return s < 0 ? -s : 2 * (n - 1) - s;
    case pad_mode::edge: return s < 0 ? 0 : n - 1;
  }
  return -1;
}

// The reference for a [R, C] operand: pads {b0, b1, e0, e1}.
std::vector<double> padded(const std::vector<double>& x, long R, long C, const long (&p)[4], pad_mode mode, double fill) {
  const long OR = R + p[0] + p[2], OC = C + p[1] + p[3];
  std::vector<double> out(std::size_t(OR * OC));
  for (long i = 0; i < OR; ++i)
    for (long j = 0; j < OC; ++j) {
      const long si = source(i, p[0], R, mode), sj = source(j, p[1], C, mode);
      out[std::size_t(i * OC + j)] = si < 0 || sj < 0 ? fill : x[std::size_t(si * C + sj)];
    }
  return out;
}

std::vector<double> random_values(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(-3, 3);
  std::vector<double> v(n);
  for (auto& e : v) e = d(rng);
  return v;
}

template <pad_mode Mode>
void check_mode(unsigned seed) {
  SCOPED_TRACE(int(Mode));
  constexpr long R = 5, C = 7;
  constexpr long p[4] = {2, 1, 3, 4};  // begin rows, begin columns, end rows, end columns
  const auto x = placeholder<"x", double, shape<dyn, dyn>>();
  const auto w = placeholder<"w", double, shape<dyn, dyn>>();
  auto xs = random_values(R * C, seed);
  xs[3] = -0.0;
  xs[8] = std::numeric_limits<double>::quiet_NaN();
  tensor<double, shape<dyn, dyn>> xv({R, C}, 0.0);
  std::copy(xs.begin(), xs.end(), xv.data());
  const auto e = pad<Mode, 2, 1, 3, 4>(x);
  const auto y = eval(e, x = xv);
  ASSERT_EQ(y.extent(0), std::size_t(R + 5));
  ASSERT_EQ(y.extent(1), std::size_t(C + 5));
  const auto want = padded(xs, R, C, p, Mode, 0.0);
  for (std::size_t k = 0; k < want.size(); ++k)
    EXPECT_EQ(std::bit_cast<std::uint64_t>(y.data()[k]), std::bit_cast<std::uint64_t>(want[k])) << k;

  // Gradient: the transpose of the reference's linear map, applied to w.
  auto ws = random_values(want.size(), seed + 1);
  tensor<double, shape<dyn, dyn>> wv({R + 5, C + 5}, 0.0);
  std::copy(ws.begin(), ws.end(), wv.data());
  std::vector<double> adjoint(std::size_t(R * C), 0.0);
  for (long i = 0; i < R + 5; ++i)
    for (long j = 0; j < C + 5; ++j) {
      const long si = source(i, p[0], R, Mode), sj = source(j, p[1], C, Mode);
      if (si >= 0 && sj >= 0) adjoint[std::size_t(si * C + sj)] += ws[std::size_t(i * (C + 5) + j)];
    }
  xs[8] = 1.0;  // a finite loss for the gradient
  std::copy(xs.begin(), xs.end(), xv.data());
  const auto loss = sum(pad<Mode, 2, 1, 3, 4>(x) * w);
  const auto g = eval(grad(loss, x), x = xv, w = wv);
  runtime_feeds feeds;
  feeds.insert_or_assign("x", runtime_tensor(xv));
  feeds.insert_or_assign("w", runtime_tensor(wv));
  runtime_feeds x_only;
  x_only.insert_or_assign("x", runtime_tensor(xv));
  const auto interpreted = interpreter(to_graph(e)).run(x_only)[0];
  const auto differentiated = interpreter(differentiate(to_graph(loss), {"x"})).run(feeds).at(1);
  const auto again = eval(e, x = xv);
  for (std::size_t k = 0; k < adjoint.size(); ++k) {
    EXPECT_NEAR(g.data()[k], adjoint[k], 1e-12) << k;
    EXPECT_NEAR(differentiated.data<double>()[k], adjoint[k], 1e-12) << k;
  }
  for (std::size_t k = 0; k < again.size(); ++k) EXPECT_EQ(interpreted.data<double>()[k], again.data()[k]) << k;
}

TEST(Pad, ModesAgainstReference) {
  check_mode<pad_mode::constant>(1);
  check_mode<pad_mode::reflect>(2);
  check_mode<pad_mode::edge>(3);
}

TEST(Pad, DocumentedExample) {
  const auto x = placeholder<"x", float, shape<1, 3>>();
  tensor<float, shape<1, 3>> v({1, 3}, 0.f);
  v(0, 0) = 1;
  v(0, 1) = 2;
  v(0, 2) = 3;
  const auto c = eval(pad<0, 2, 0, 1>(x), x = v);
  const auto r = eval(pad<pad_mode::reflect, 0, 2, 0, 1>(x), x = v);
  const auto e = eval(pad<pad_mode::edge, 0, 2, 0, 1>(x), x = v);
  static_assert(std::is_same_v<shape_of<decltype(pad<0, 2, 0, 1>(x))>, shape<1, 6>>);
  const float wc[] = {0, 0, 1, 2, 3, 0}, wr[] = {3, 2, 1, 2, 3, 2}, we[] = {1, 1, 1, 2, 3, 3};
  for (std::size_t j = 0; j < 6; ++j) {
    EXPECT_EQ(c(0, j), wc[j]) << j;
    EXPECT_EQ(r(0, j), wr[j]) << j;
    EXPECT_EQ(e(0, j), we[j]) << j;
  }
}

// A constant border: a number, or a scalar expression that receives the border's gradient.
TEST(Pad, ConstantValue) {
  const auto x = placeholder<"x", float, shape<dyn>>();
  const auto c = placeholder<"c", float, shape<>>();
  tensor<float, shape<dyn>> v(extents_t<1>{4}, 0.f);
  v[0] = -0.f;
  v[1] = std::numeric_limits<float>::quiet_NaN();
  v[2] = 7;
  v[3] = -2;
  const auto y = eval(pad<3, 2>(x, 2.5f), x = v);
  ASSERT_EQ(y.size(), 9u);
  for (std::size_t j : {0u, 1u, 2u, 7u, 8u}) EXPECT_EQ(y[j], 2.5f) << j;
  EXPECT_TRUE(std::signbit(y[3]));  // -0 kept
  EXPECT_TRUE(std::isnan(y[4]));
  EXPECT_EQ(y[5], 7.f);
  tensor<float, shape<>> cv({}, 0.f);
  cv() = 0.75f;
  v[1] = 1.f;
  // d/dc sum(pad(x, c) * k) with k = 1..9 is the sum of k over the border: 1 + 2 + 3 + 8 + 9.
  tensor<float, shape<dyn>> kv(extents_t<1>{9}, 0.f);
  for (std::size_t j = 0; j < 9; ++j) kv[j] = float(j + 1);
  const auto k = placeholder<"k", float, shape<dyn>>();
  const auto dc = eval(grad(sum(pad<3, 2>(x, c) * k), c), x = v, c = cv, k = kv);
  EXPECT_EQ(dc(), 23.f);
  const auto dx = eval(grad(sum(pad<3, 2>(x, c) * k), x), x = v, c = cv, k = kv);
  for (std::size_t j = 0; j < 4; ++j) EXPECT_EQ(dx[j], float(j + 4)) << j;
}

TEST(Pad, ThreeAxesAndGraphHandles) {
  const auto x = placeholder<"x", float, shape<dyn, dyn, dyn>>();
  tensor<float, shape<dyn, dyn, dyn>> v({3, 4, 5}, 0.f);
  for (std::size_t q = 0; q < v.size(); ++q) v.data()[q] = float(q) * 0.5f - 7.f;
  const auto typed = eval(pad<pad_mode::reflect, 1, 0, 2, 2, 3, 4>(x), x = v);
  graph_builder b;
  auto h = b.input("x", dtype::f32, {-1, 4, 5});
  const graph g = b.build({pad(h, {1, 0, 2, 2, 3, 4}, pad_mode::reflect)});
  EXPECT_EQ(g.type_of(g.outputs[0]).shape, (std::vector<std::int64_t>{-1, 7, 11}));
  runtime_feeds feeds;
  feeds.insert_or_assign("x", runtime_tensor(v));
  const auto out = run_graph(g, feeds);
  ASSERT_EQ(out.at(0).extents(), (runtime_extents{6, 7, 11}));
  for (std::size_t q = 0; q < typed.size(); ++q) EXPECT_EQ(out.at(0).data<float>()[q], typed.data()[q]) << q;
}

TEST(Pad, RefusedPads) {
  const auto x = placeholder<"x", float, shape<dyn, dyn>>();
  tensor<float, shape<dyn, dyn>> v({2, 3}, 1.f);
  // reflect needs each pad shorter than its axis: 2 rows cannot mirror 2
  EXPECT_THROW(eval(pad<pad_mode::reflect, 2, 0, 0, 0>(x), x = v), shape_error);
  tensor<float, shape<dyn, dyn>> empty({0, 3}, 1.f);
  EXPECT_THROW(eval(pad<pad_mode::edge, 1, 0, 0, 0>(x), x = empty), shape_error);
  EXPECT_EQ(eval(pad<1, 0, 1, 0>(x), x = empty).extent(0), 2u);  // constant: zeros around nothing
  graph_builder b;
  auto h = b.input("x", dtype::f32, {2, 3});
  EXPECT_THROW(pad(h, {1, 2}, pad_mode::constant), shape_error);  // 2 pads for rank 2
}

}  // namespace
