// split, tile (ops/shape_composites.hpp), unsqueeze (ops/expand_dims.hpp) and nll_loss
// (ops/losses.hpp) against numpy's split/tile/expand_dims and PyTorch's nll_loss written out here,
// on odd extents; gradients through them against central finite differences in float64.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <symflow/debug/check_gradient.hpp>
#include <symflow/symflow.hpp>

namespace {
using namespace symflow;

template <class T, class S>
tensor<T, S> counting(std::array<std::size_t, S::rank> e) {
  tensor<T, S> t(e, uninitialized);
  for (std::size_t k = 0; k < t.size(); ++k) t.data()[k] = T(k) * T(0.5) - T(3);
  return t;
}

TEST(ShapeComposites, SplitCutsConsecutivePartsAlongAnAxis) {
  auto x = placeholder<"x", float, shape<dyn, 9>>();
  const auto xv = counting<float, shape<dyn, 9>>({3, 9});
  const auto [a, b, c] = split<-1, 2, 4, 3>(x);
  const auto [av, bv, cv] = eval(a, b, c, x = xv);
  for (std::size_t r = 0; r < 3; ++r) {
    for (std::size_t j = 0; j < 2; ++j) EXPECT_EQ(av(r, j), xv(r, j));
    for (std::size_t j = 0; j < 4; ++j) EXPECT_EQ(bv(r, j), xv(r, 2 + j));
    for (std::size_t j = 0; j < 3; ++j) EXPECT_EQ(cv(r, j), xv(r, 6 + j));
  }
  const auto [top, rest] = split<0, 1, 2>(x);
  const auto [tv, rv] = eval(top, rest, x = xv);
  EXPECT_EQ(tv.extent(0), 1u);
  EXPECT_EQ(rv.extent(0), 2u);
  EXPECT_EQ(rv(1, 8), xv(2, 8));
}

TEST(ShapeComposites, TileRepeatsAlongEachAxisAsNumpyTile) {
  auto x = placeholder<"x", float, shape<2, 3>>();
  const auto xv = counting<float, shape<2, 3>>({2, 3});
  const auto y = eval(tile<3, 2>(x), x = xv);
  ASSERT_EQ(y.extent(0), 6u);
  ASSERT_EQ(y.extent(1), 6u);
  for (std::size_t i = 0; i < 6; ++i)
    for (std::size_t j = 0; j < 6; ++j) EXPECT_EQ(y(i, j), xv(i % 2, j % 3)) << i << "," << j;
}

TEST(ShapeComposites, UnsqueezeInsertsAnAxisCountedInTheResult) {
  auto x = placeholder<"x", float, shape<dyn, 3>>();
  static_assert(std::is_same_v<shape_of<decltype(unsqueeze<0>(x))>, shape<1, dyn, 3>>);
  static_assert(std::is_same_v<shape_of<decltype(unsqueeze<1>(x))>, shape<dyn, 1, 3>>);
  static_assert(std::is_same_v<shape_of<decltype(unsqueeze<-1>(x))>, shape<dyn, 3, 1>>);
  const auto xv = counting<float, shape<dyn, 3>>({2, 3});
  const auto y = eval(unsqueeze<-2>(x), x = xv);
  EXPECT_EQ(y(1, 0, 2), xv(1, 2));
}

TEST(ShapeComposites, NllLossIsPyTorchsAndDifferentiates) {
  constexpr std::size_t classes = 7;
  auto logits = placeholder<"logits", double, shape<dyn, classes>>();
  auto target = placeholder<"target", std::int64_t, shape<dyn>>();
  tensor<double, shape<dyn, classes>> lv({5, classes}, uninitialized);
  std::mt19937 rng(3);
  std::normal_distribution<double> n(0, 2);
  for (auto& v : lv) v = n(rng);
  tensor<std::int64_t, shape<dyn>> tv({5}, uninitialized);
  const std::int64_t picks[] = {0, 6, 3, -1, 6};  // -1: the last class
  std::copy(std::begin(picks), std::end(picks), tv.begin());
  const auto loss = nll_loss(log_softmax(logits), target);
  const auto got = eval(loss, logits = lv, target = tv);
  // PyTorch: -mean_n (logits[n, t] - logsumexp(logits[n, :])).
  double want = 0;
  for (std::size_t r = 0; r < 5; ++r) {
    double m = -INFINITY, s = 0;
    for (std::size_t c = 0; c < classes; ++c) m = std::max(m, lv(r, c));
    for (std::size_t c = 0; c < classes; ++c) s += std::exp(lv(r, c) - m);
    const std::size_t t = std::size_t(picks[r] < 0 ? picks[r] + std::int64_t(classes) : picks[r]);
    want -= (lv(r, t) - m - std::log(s)) / 5;
  }
  EXPECT_NEAR(got(), want, 1e-12);
  const auto c = check_gradient(loss, logits, logits = lv, target = tv);
  EXPECT_LT(c.max_relative_error, 1e-7) << c.symbolic_at_worst << " vs " << c.numeric_at_worst;
  // Gradients through split and tile: each part's adjoint lands where it came from.
  // (On types, concat's gradient needs static extents along its axis: tile a static shape.)
  auto x = placeholder<"x", double, shape<3, 5>>();
  tensor<double, shape<3, 5>> xv({3, 5}, uninitialized);
  for (auto& v : xv) v = n(rng);
  const auto [p, q] = split<1, 2, 3>(x);
  const auto through = sum(square(p)) + sum(sin(q) * 3.0) + sum(exp(tile<2, 1>(x)));
  const auto c2 = check_gradient(through, x, x = xv);
  EXPECT_LT(c2.max_relative_error, 1e-7) << c2.symbolic_at_worst << " vs " << c2.numeric_at_worst;
}

}  // namespace
