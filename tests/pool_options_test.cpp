// Pooling with padding, ceil rounding and count_include_pad (ops/pool2d.hpp), and 1-D pooling
// (ops/pool1d.hpp), against PyTorch's CPU pooling algorithm written out here in float64
// (aten/src/ATen/native: pooling_output_shape and the avg/max pool loops: hstart = oh*stride - pad,
// hend = min(hstart + k, H + pad), pool_size taken before clamping to the input): odd extents,
// every option combination, NaN/Inf, gradients against central differences, the graph interpreter
// and run-time differentiation against compiled evaluation, and asymmetric pads in a graph.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <symflow/debug/check_gradient.hpp>
#include <symflow/graph/all.hpp>
#include <symflow/runtime/grad.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <symflow/symflow.hpp>

#include "runtime_gradient_check.hpp"

using namespace symflow;

namespace {

// PyTorch's pooling_output_shape_pad_lr with dilation 1.
std::size_t torch_out(std::size_t in, std::size_t k, std::size_t s, std::size_t pad_l, std::size_t pad_r, bool ceil) {
  const std::int64_t num = std::int64_t(in + pad_l + pad_r) - std::int64_t(k) + (ceil ? std::int64_t(s) - 1 : 0);
  std::int64_t out = num / std::int64_t(s) + 1;
  if (ceil && (out - 1) * std::int64_t(s) >= std::int64_t(in + pad_l)) --out;
  return std::size_t(out);
}

struct pool_case {
  std::size_t kh, kw, sh, sw, top, left, bottom, right;
  bool ceil, include_pad, max;
};

// The reference pooling of x [N, H, W, C] (float64), NaN-aware as PyTorch's CPU max pool is
// not: symflow's scan keeps the first maximum by strict >, so the reference does the same.
std::vector<double> reference(const pool_case& p, const std::vector<double>& x, std::size_t N, std::size_t H, std::size_t W,
                              std::size_t C, std::size_t& OH, std::size_t& OW) {
  OH = torch_out(H, p.kh, p.sh, p.top, p.bottom, p.ceil);
  OW = torch_out(W, p.kw, p.sw, p.left, p.right, p.ceil);
  std::vector<double> y(N * OH * OW * C);
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t oh = 0; oh < OH; ++oh)
      for (std::size_t ow = 0; ow < OW; ++ow)
        for (std::size_t c = 0; c < C; ++c) {
          std::int64_t hs = std::int64_t(oh * p.sh) - std::int64_t(p.top), ws = std::int64_t(ow * p.sw) - std::int64_t(p.left);
          std::int64_t he = std::min<std::int64_t>(hs + std::int64_t(p.kh), std::int64_t(H + p.bottom));
          std::int64_t we = std::min<std::int64_t>(ws + std::int64_t(p.kw), std::int64_t(W + p.right));
          const std::int64_t pool_size = (he - hs) * (we - ws);
          hs = std::max<std::int64_t>(hs, 0), ws = std::max<std::int64_t>(ws, 0);
          he = std::min<std::int64_t>(he, std::int64_t(H)), we = std::min<std::int64_t>(we, std::int64_t(W));
          double acc = 0;
          bool first = true;
          for (std::int64_t h = hs; h < he; ++h)
            for (std::int64_t w = ws; w < we; ++w) {
              const double v = x[((n * H + std::size_t(h)) * W + std::size_t(w)) * C + c];
              if (p.max) {
                if (first || v > acc) acc = v;
              } else {
                acc += v;
              }
              first = false;
            }
          if (!p.max) acc /= double(p.include_pad ? pool_size : (he - hs) * (we - ws));
          y[((n * OH + oh) * OW + ow) * C + c] = acc;
        }
  return y;
}

template <class T>
tensor<T, shape<dyn, dyn, dyn, dyn>> random_images(std::size_t N, std::size_t H, std::size_t W, std::size_t C, unsigned seed,
                                                  bool specials) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-3, 3);
  tensor<T, shape<dyn, dyn, dyn, dyn>> t({N, H, W, C}, T(0));
  for (auto& v : t) v = T(u(rng));
  if (specials) {
    t.data()[5] = std::numeric_limits<T>::quiet_NaN();
    t.data()[17] = std::numeric_limits<T>::infinity();
    t.data()[t.size() - 4] = -std::numeric_limits<T>::infinity();
    t.data()[30] = T(-0.0);
  }
  return t;
}

// One typed pooling against the reference, and its graph form through the interpreter.
template <std::size_t K, std::size_t S, std::size_t P, pool_options O, bool Max>
void check_typed(std::size_t H, std::size_t W, unsigned seed) {
  constexpr bool ceil = has_option(O, pool_options::ceil_mode), include = has_option(O, pool_options::count_include_pad);
  SCOPED_TRACE(std::string(Max ? "max" : "avg") + " window " + std::to_string(K) + " stride " + std::to_string(S) + " pad " +
               std::to_string(P) + (ceil ? " ceil" : "") + (include ? " count_include_pad" : "") + " on " + std::to_string(H) +
               "x" + std::to_string(W));
  const std::size_t N = 2, C = 3;
  const auto x = placeholder<"x", double, shape<dyn, dyn, dyn, dyn>>();
  const auto v = random_images<double>(N, H, W, C, seed, true);
  const auto e = [&] {
    if constexpr (Max) return max_pool2d<K, S, P, O>(x);
    else return avg_pool2d<K, S, P, O>(x);
  }();
  const auto got = eval(e, x = v);
  std::size_t OH = 0, OW = 0;
  const auto want = reference({K, K, S, S, P, P, P, P, ceil, include, Max}, std::vector<double>(v.begin(), v.end()), N, H, W, C,
                              OH, OW);
  ASSERT_EQ(got.extent(1), OH);
  ASSERT_EQ(got.extent(2), OW);
  for (std::size_t q = 0; q < want.size(); ++q) {
    if (std::isnan(want[q])) EXPECT_TRUE(std::isnan(got.data()[q])) << q;
    else if (std::isinf(want[q])) EXPECT_EQ(got.data()[q], want[q]) << q;
    else EXPECT_NEAR(got.data()[q], want[q], 1e-12 * (1 + std::abs(want[q]))) << q;
  }
  runtime_feeds feeds;
  feeds.insert_or_assign("x", runtime_tensor(v));
  const auto interpreted = interpreter(to_graph(e)).run(feeds)[0];
  ASSERT_EQ(interpreted.size(), got.size());
  for (std::size_t q = 0; q < got.size(); ++q)
    EXPECT_TRUE(interpreted.data<double>()[q] == got.data()[q] || (std::isnan(got.data()[q]) && std::isnan(interpreted.data<double>()[q])));
}

TEST(PoolOptions, MaxPoolingMatchesTorchsAlgorithm) {
  check_typed<2, 2, 0, pool_options::none, true>(7, 6, 1);
  check_typed<3, 2, 1, pool_options::none, true>(7, 6, 2);
  check_typed<3, 2, 1, pool_options::ceil_mode, true>(7, 6, 3);
  check_typed<2, 2, 1, pool_options::ceil_mode, true>(5, 5, 4);  // the last window would start in the padding
  check_typed<3, 3, 0, pool_options::ceil_mode, true>(8, 7, 5);
  check_typed<4, 1, 3, pool_options::none, true>(5, 4, 6);
}

TEST(PoolOptions, AveragePoolingMatchesTorchsAlgorithm) {
  check_typed<2, 2, 0, pool_options::none, false>(7, 6, 7);
  check_typed<3, 2, 1, pool_options::none, false>(7, 6, 8);
  check_typed<3, 2, 1, pool_options::count_include_pad, false>(7, 6, 9);
  check_typed<3, 2, 1, pool_options::ceil_mode, false>(7, 6, 10);
  check_typed<3, 2, 1, pool_options::ceil_mode | pool_options::count_include_pad, false>(8, 5, 11);
  check_typed<2, 2, 1, pool_options::ceil_mode | pool_options::count_include_pad, false>(5, 5, 12);
  check_typed<3, 3, 0, pool_options::ceil_mode | pool_options::count_include_pad, false>(8, 7, 13);  // past the input, not padding
  check_typed<5, 3, 2, pool_options::count_include_pad, false>(6, 9, 14);
}

TEST(PoolOptions, WorkedExamples) {
  // [[4]] padded by 1, window 2, stride 1: four windows holding the one element.
  const auto x = placeholder<"x", float, shape<1, 1, 1, 1>>();
  const tensor<float, shape<1, 1, 1, 1>> four({1, 1, 1, 1}, 4.f);
  const auto excl = eval(avg_pool2d<2, 1, 1>(x), x = four);
  const auto incl = eval(avg_pool2d<2, 1, 1, pool_options::count_include_pad>(x), x = four);
  for (std::size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(excl.data()[k], 4.f);
    EXPECT_EQ(incl.data()[k], 1.f);
  }
  // torch.nn.MaxPool1d(3, stride=2, padding=1, ceil_mode=True) of 1..6 is [2, 4, 6, 6]? No: L' =
  // ceil((6 + 2 - 3) / 2) + 1 = 4, and the fourth window starts at 5 (inside the input): [2, 4, 6, 6].
  const auto s = placeholder<"s", float, shape<1, 6, 1>>();
  tensor<float, shape<1, 6, 1>> ramp({1, 6, 1}, 0.f);
  for (std::size_t k = 0; k < 6; ++k) ramp.data()[k] = float(k + 1);
  const auto m = eval(max_pool1d<3, 2, 1, pool_options::ceil_mode>(s), s = ramp);
  ASSERT_EQ(m.extent(1), 4u);
  const float want_max[] = {2, 4, 6, 6};
  for (std::size_t k = 0; k < 4; ++k) EXPECT_EQ(m.data()[k], want_max[k]) << k;
  // AvgPool1d(3, stride=2, padding=1) of 1..6, padding not counted: [1.5, 3, 5], counted: [1, 3, 5].
  const auto a = eval(avg_pool1d<3, 2, 1>(s), s = ramp);
  const auto ai = eval(avg_pool1d<3, 2, 1, pool_options::count_include_pad>(s), s = ramp);
  const float want_avg[] = {1.5f, 3, 5}, want_avg_incl[] = {1, 3, 5};
  ASSERT_EQ(a.extent(1), 3u);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_FLOAT_EQ(a.data()[k], want_avg[k]) << k;
    EXPECT_FLOAT_EQ(ai.data()[k], want_avg_incl[k]) << k;
  }
}

TEST(PoolOptions, OneDimensionalPoolingIsTwoDimensionalOnOneRow) {
  const auto s = placeholder<"s", double, shape<dyn, 11, 4>>();
  const auto v4 = random_images<double>(3, 1, 11, 4, 21, true);
  tensor<double, shape<dyn, 11, 4>> v({3, 11, 4}, 0.0);
  std::copy(v4.begin(), v4.end(), v.begin());
  const auto m = eval(max_pool1d<4, 3, 2, pool_options::ceil_mode>(s), s = v);
  const auto a = eval(avg_pool1d<3, 2, 1, pool_options::count_include_pad>(s), s = v);
  std::size_t OH = 0, OW = 0;
  const std::vector<double> flat(v.begin(), v.end());
  const auto want_m = reference({1, 4, 1, 3, 0, 2, 0, 2, true, false, true}, flat, 3, 1, 11, 4, OH, OW);
  ASSERT_EQ(m.extent(1), OW);
  for (std::size_t q = 0; q < want_m.size(); ++q)
    if (!std::isnan(want_m[q])) EXPECT_EQ(m.data()[q], want_m[q]) << q;
  const auto want_a = reference({1, 3, 1, 2, 0, 1, 0, 1, false, true, false}, flat, 3, 1, 11, 4, OH, OW);
  ASSERT_EQ(a.extent(1), OW);
  for (std::size_t q = 0; q < want_a.size(); ++q)
    if (std::isinf(want_a[q])) EXPECT_EQ(a.data()[q], want_a[q]) << q;
    else if (!std::isnan(want_a[q])) EXPECT_NEAR(a.data()[q], want_a[q], 1e-12 * (1 + std::abs(want_a[q]))) << q;
}

TEST(PoolOptions, GradientsMatchCentralDifferences) {
  auto x = placeholder<"x", double, shape<2, 7, 6, 3>>();
  tensor<double, shape<2, 7, 6, 3>> xv({2, 7, 6, 3}, 0.0);
  // Distinct values, so every window's maximum is strict and the max gradient is smooth nearby.
  std::vector<double> vals(xv.size());
  for (std::size_t k = 0; k < vals.size(); ++k) vals[k] = double(k) * 0.01 - 1.3;
  std::shuffle(vals.begin(), vals.end(), std::mt19937(5));
  std::copy(vals.begin(), vals.end(), xv.begin());
  const auto w = constant(random_images<double>(2, 4, 4, 3, 9, false));
  const auto loss = sum(sin(avg_pool2d<3, 2, 1, pool_options::ceil_mode>(x)) * w) +
                    sum(square(max_pool2d<3, 2, 1, pool_options::ceil_mode>(x)) * w) +
                    sum(exp(avg_pool2d<2, 2, 1, pool_options::count_include_pad>(x)));
  const auto c = check_gradient(loss, x, x = xv);
  EXPECT_LT(c.max_relative_error, 1e-7) << c.symbolic_at_worst << " vs " << c.numeric_at_worst;
  symflow::testing::expect_runtime_gradient_matches(loss, x, xv, 1e-12);
  // The tangent of average pooling (linear) against the gradient's transpose: <jvp(t), w> = <t, vjp(w)>.
  auto ones = constant(tensor<double, shape<2, 7, 6, 3>>({2, 7, 6, 3}, 1.0));
  const auto lin = sum(avg_pool2d<3, 2, 1, pool_options::ceil_mode | pool_options::count_include_pad>(x) * w);
  const double directional = eval(jvp(lin, x, ones), x = xv)();
  const double through_grad = eval(sum(grad(lin, x)), x = xv)();
  EXPECT_NEAR(directional, through_grad, 1e-12);
}

TEST(PoolOptions, AGraphMayPadTheTwoSidesDifferently) {
  const auto x = placeholder<"x", double, shape<dyn, dyn, dyn, dyn>>();
  const auto v = random_images<double>(2, 7, 6, 3, 31, false);
  for (const bool max : {true, false}) {
    graph g = max ? to_graph(max_pool2d<3, 2>(x)) : to_graph(avg_pool2d<3, 2>(x));
    for (auto& node : g.nodes)
      if (node.op == "max_pool2d" || node.op == "avg_pool2d")
        for (auto& a : node.attributes) {
          if (a.key == "pads") a.value = std::vector<std::int64_t>{0, 2, 1, 1};
          if (a.key == "window") a.value = std::vector<std::int64_t>{3, 4};
        }
    // The node's type is recomputed by the builder; the interpreter checks extents as it runs.
    g.nodes.back().type.shape = {-1, -1, -1, -1};
    runtime_feeds feeds;
    feeds.insert_or_assign("x", runtime_tensor(v));
    const auto got = interpreter(g).run(feeds)[0];
    std::size_t OH = 0, OW = 0;
    const auto want = reference({3, 4, 2, 2, 0, 2, 1, 1, false, false, max}, std::vector<double>(v.begin(), v.end()), 2, 7, 6, 3,
                                OH, OW);
    ASSERT_EQ(got.extents()[1], OH);
    ASSERT_EQ(got.extents()[2], OW);
    for (std::size_t q = 0; q < want.size(); ++q) EXPECT_NEAR(got.data<double>()[q], want[q], 1e-12) << q;
  }
}

TEST(PoolOptions, RefusedGeometriesAreShapeErrors) {
  const auto x = placeholder<"x", float, shape<dyn, dyn, dyn, dyn>>();
  const tensor<float, shape<dyn, dyn, dyn, dyn>> small({1, 2, 2, 1}, 1.f);
  EXPECT_THROW((void)eval(max_pool2d<3>(x), x = small), shape_error);                   // the window does not fit
  EXPECT_NO_THROW((void)eval(max_pool2d<3, 1, 1>(x), x = small));                      // it fits once padded
  graph g = to_graph(avg_pool2d<2>(x));
  for (auto& node : g.nodes)
    for (auto& a : node.attributes)
      if (a.key == "pads") a.value = std::vector<std::int64_t>{2, 0, 0, 0};  // a pad as large as the window
  runtime_feeds feeds;
  feeds.insert_or_assign("x", runtime_tensor(tensor<float, shape<dyn, dyn, dyn, dyn>>({1, 4, 4, 1}, 1.f)));
  EXPECT_THROW((void)interpreter(g).run(feeds), symflow::error);
}

}  // namespace
